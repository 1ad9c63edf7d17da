-- wrk script of `npm run bench`. Arguments after `--`: mode, then mode's values.
--   read <n>                 GET /posts/<random id in 1..n>
--   readas <n> <authorization>  the same, with that Authorization header
--   path <path>              GET <path> (a list page)
--   pathas <path> <authorization>  the same, with that Authorization header
--   mixed <n> <token>        90% GET /posts/<random id>, 10% PUT of a whole post
--   create <token> [title]   POST /posts (with that title, else a random one of a million)
-- done() prints one JSON line that bench/throughput.ts reads.
local mode, n, token, path, title, authorization
local content = string.rep("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 36)

function init (args)
  mode = args[1]
  if mode == "read" then n = tonumber(args[2])
  elseif mode == "readas" then n = tonumber(args[2]); authorization = args[3]
  elseif mode == "path" then path = args[2]
  elseif mode == "pathas" then path = args[2]; authorization = args[3]
  elseif mode == "mixed" then n = tonumber(args[2]); token = args[3]
  elseif mode == "create" then token = args[2]; title = args[3]
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end

local function body (i)
  return '{"title":"' .. (title or ("Bench post " .. i)) .. '","content":"' .. content .. '"}'
end

function request ()
  if mode == "read" then
    return wrk.format("GET", "/posts/" .. math.random(1, n))
  elseif mode == "readas" then
    return wrk.format("GET", "/posts/" .. math.random(1, n), { ["Authorization"] = authorization })
  elseif mode == "path" then
    return wrk.format("GET", path)
  elseif mode == "pathas" then
    return wrk.format("GET", path, { ["Authorization"] = authorization })
  elseif mode == "mixed" then
    local id = math.random(1, n)
    if math.random(1, 10) == 1 then
      return wrk.format("PUT", "/posts/" .. id, { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }, body(id))
    end
    return wrk.format("GET", "/posts/" .. id)
  else
    return wrk.format("POST", "/posts", { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }, body(math.random(1, 1000000)))
  end
end

function done (summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.connect, e.read, e.write, e.status, e.timeout))
end
