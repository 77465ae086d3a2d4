--[[
  Compare-and-delete for reconciliation: removes an id from scheduled only
  if its score is still the one the caller read, so an entry re-added since
  (another score) is kept.

  Input:
    KEYS[1] scheduled  sorted set: job id -> due time (epoch ms)

    ARGV    pairs: id1, expectedScore1, id2, expectedScore2, ...

  Output:
    The number of ids removed.

  Time complexity: O(M log N), M the pairs, N the members of scheduled.
]]
local rcall = redis.call

local removed = 0
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local score = rcall("ZSCORE", KEYS[1], id)
  if score and tonumber(score) == tonumber(ARGV[i + 1]) then
    removed = removed + rcall("ZREM", KEYS[1], id)
  end
end
return removed
