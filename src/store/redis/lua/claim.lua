--[[
  Claims the due members of one shard: moves up to `max` members of
  scheduled whose due time has come (lowest scores first) into leased, with
  a claim deadline. An unsettled claim past its deadline is returned by
  reap.lua, so a claimer that crashes loses nothing.

  Input:
    KEYS[1] scheduled  sorted set: job id -> due time (epoch ms)
    KEYS[2] leased     sorted set: job id -> claim deadline (epoch ms)

    ARGV[1] max        most ids to claim (integer >= 0)
    ARGV[2] claimMs    how long the claim lasts (ms)

  Output:
    A flat array: the claimed ids in due order, then, as the LAST element,
    the score of scheduled's new head (the earliest remaining due time) as a
    string, or the integer -1 when scheduled is empty: when to look again.

  "now" is Redis TIME, one clock for every claimer.

  Time complexity: O(log N + M), N the members of scheduled, M the claimed.
]]
local rcall = redis.call

local t = rcall("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])

local ids = {}
if max > 0 then
  ids = rcall("ZRANGE", KEYS[1], "-inf", now, "BYSCORE", "LIMIT", 0, max)
end

if #ids > 0 then
  local deadline = now + tonumber(ARGV[2])
  -- ZADD in slices: unpack() is bounded by Lua's C stack.
  local args = {}
  for i = 1, #ids do
    args[#args + 1] = deadline
    args[#args + 1] = ids[i]
    if #args >= 1000 or i == #ids then
      rcall("ZADD", KEYS[2], unpack(args))
      args = {}
    end
  end
  -- The claimed ids are scheduled's lowest ranks (same order as ZRANGE).
  rcall("ZREMRANGEBYRANK", KEYS[1], 0, #ids - 1)
end

local head = rcall("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
if head[2] then
  ids[#ids + 1] = head[2]
else
  ids[#ids + 1] = -1
end
return ids
