-- include: now.lua
local function nested() return 1 end
