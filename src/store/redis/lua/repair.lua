--[[
  Store-to-index repair for reconciliation: for each id the store says is
  due at `score`, adds it to scheduled, or lowers a later score there,
  unless the id is claimed (in leased): its claimer settles it. Checked and
  written in one script, so a claim between the caller's read and this
  write cannot leave an id both claimed and scheduled.

  Input:
    KEYS[1] scheduled  sorted set: job id -> due time (epoch ms)
    KEYS[2] leased     sorted set: job id -> claim deadline (epoch ms)

    ARGV    pairs: id1, score1, id2, score2, ...

  Output:
    The number of ids added or lowered.

  Time complexity: O(M log N), M the pairs, N the members of the sets.
]]
local rcall = redis.call

local repaired = 0
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local score = tonumber(ARGV[i + 1])
  if not rcall("ZSCORE", KEYS[2], id) then
    local current = rcall("ZSCORE", KEYS[1], id)
    if not current or tonumber(current) > score then
      rcall("ZADD", KEYS[1], score, id)
      repaired = repaired + 1
    end
  end
end
return repaired
