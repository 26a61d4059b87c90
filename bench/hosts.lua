-- wrk script: each request carries a random Host among the 1000 routed
-- hosts (host-0.bench.local .. host-999.bench.local).
local hosts = {}
for i = 0, 999 do
  hosts[i + 1] = "host-" .. i .. ".bench.local"
end
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/", { ["Host"] = hosts[math.random(1, 1000)] })
end
