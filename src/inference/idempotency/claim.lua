-- Claims the key for a call: 'mismatch' (another body), 'done' (with the record), 'running' (with
-- "<ms since it started> <ms left on its lease>"), or 'claimed' (with the request id of a call whose
-- lease ran out).
local v = redis.call('GET', record)
local now = tonumber(nowMs)
local prev = ''
if v then
  local r = cjson.decode(v)
  if tonumber(r.exp) > now then
    if r.h ~= requestHash then return {'mismatch'} end
    if r.s == 'done' then return {'done', v} end
    if tonumber(r.lease) > now then
      -- A record written before `st` was kept counts as started just now.
      local started = tonumber(r.st or now)
      return {'running', string.format('%.0f %.0f', now - started, tonumber(r.lease) - now)}
    end
    prev = r.rid
  end
end
local rec = '{"s":"run","h":' .. cjson.encode(requestHash) .. ',"t":' .. cjson.encode(token) ..
  ',"st":' .. string.format('%.0f', now) .. ',"lease":' .. string.format('%.0f', now + tonumber(leaseMs)) .. ',"exp":' .. string.format('%.0f', now + tonumber(windowMs)) ..
  ',"rid":' .. cjson.encode(requestId) .. '}'
redis.call('SET', record, rec, 'PX', windowMs)
return {'claimed', prev}
