--[[
  Returns expired claims (their claimer crashed or stalled): members of
  leased whose deadline is before now go back to scheduled, due now. NX
  keeps an entry scheduled holds already (re-indexed since the claim).

  Input:
    KEYS[1] scheduled  sorted set: job id -> due time (epoch ms)
    KEYS[2] leased     sorted set: job id -> claim deadline (epoch ms)

    ARGV[1] max        most claims to return (integer >= 0)

  Output:
    The number of claims returned (removed from leased).

  "now" is Redis TIME, the clock claim.lua set the deadlines with.

  Time complexity: O(log L + M log N), L the members of leased, M the
  reaped, N the members of scheduled.
]]
local rcall = redis.call

local t = rcall("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])
if max <= 0 then
  return 0
end

-- "(" excludes now itself; %.0f, not tostring, which keeps only 14 digits.
local ids = rcall("ZRANGE", KEYS[2], "-inf", string.format("(%.0f", now), "BYSCORE", "LIMIT", 0, max)
for i = 1, #ids do
  rcall("ZADD", KEYS[1], "NX", now, ids[i])
end
if #ids > 0 then
  -- The reaped ids are leased's lowest ranks (same order as ZRANGE).
  rcall("ZREMRANGEBYRANK", KEYS[2], 0, #ids - 1)
end
return #ids
