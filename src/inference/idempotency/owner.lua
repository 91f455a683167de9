-- Renews the lease (action 'lease', value: the new lease end in ms), completes (action 'done',
-- value: the reply as JSON) or releases (any other action), only for the owner's token.
local value = ARGV[restFrom] -- absent for a release
local v = redis.call('GET', record)
if not v then return 0 end
local r = cjson.decode(v)
if r.s ~= 'run' or r.t ~= token then return 0 end
if action == 'lease' then
  local rec = '{"s":"run","h":' .. cjson.encode(r.h) .. ',"t":' .. cjson.encode(r.t) ..
    ',"st":' .. string.format('%.0f', r.st or 0) .. ',"lease":' .. value ..
    ',"exp":' .. string.format('%.0f', r.exp) .. ',"rid":' .. cjson.encode(r.rid) .. '}'
  redis.call('SET', record, rec, 'KEEPTTL')
elseif action == 'done' then
  -- The reply goes in as given (not through cjson, which would turn an empty list into {}).
  local d = '{"s":"done","h":' .. cjson.encode(r.h) .. ',"exp":' .. string.format('%.0f', r.exp) ..
    ',"rid":' .. cjson.encode(r.rid) .. ',"reply":' .. value .. '}'
  redis.call('SET', record, d, 'KEEPTTL')
else
  redis.call('DEL', record)
end
return 1
