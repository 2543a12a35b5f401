-- What an operator's settlement answers when the record is not one it settles: 'ABSENT', or the settled state it is
-- in (a completed record's result exists and is replayed); nil for an unsettled one (IN_FLIGHT or UNCERTAIN).
local function not_settleable(state)
  if not state then
    return 'ABSENT'
  end
  if state ~= 'IN_FLIGHT' and state ~= 'UNCERTAIN' then
    return state
  end
  return nil
end
