--[[
  Settles claims after dispatch: each id leaves leased, and its next
  occurrence (if any) goes into scheduled with NX: if the job was re-indexed
  since the claim (a concurrent update wrote scheduled), that entry wins.

  Input:
    KEYS[1] scheduled  sorted set: job id -> due time (epoch ms)
    KEYS[2] leased     sorted set: job id -> claim deadline (epoch ms)

    ARGV    pairs: id1, score1, id2, score2, ... where score is the next
            due time (epoch ms) or "" for no next occurrence.

  Output:
    The number of ids added to scheduled.

  Time complexity: O(M log N), M the pairs, N the members of the sets.
]]
local rcall = redis.call

local added = 0
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local score = ARGV[i + 1]
  rcall("ZREM", KEYS[2], id)
  if score ~= "" then
    added = added + rcall("ZADD", KEYS[1], "NX", score, id)
  end
end
return added
