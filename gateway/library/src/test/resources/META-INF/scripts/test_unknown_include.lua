-- A script of the tests' own: it includes a piece that does not exist.
-- include: no_such_piece.lua
return 1
