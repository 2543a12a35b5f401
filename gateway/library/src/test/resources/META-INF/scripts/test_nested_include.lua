-- A script of the tests' own: its piece includes another.
-- include: test_nesting.lua
return 1
