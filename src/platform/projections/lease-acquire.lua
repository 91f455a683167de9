-- Takes a free (expired) partition: the new token "{n}-{owner}" (the owner id is random per process,
-- so a token is never handed out twice, even after Redis lost the counter), or false.
if redis.call('EXISTS', lease) == 1 then return false end
local token = redis.call('INCR', fenceCounter) .. '-' .. owner
redis.call('SET', fence, token)
redis.call('SET', lease, token, 'PX', ttlMs)
return token
