-- The e-mail is only in the invitation's own hash: read it inside the MULTI.
local email = redis.call('HGET', invitation, 'email')
if not email then return 0 end
redis.call('HSET', invitation, 'status', status, 'settled', settled)
redis.call('HDEL', emailPrefix .. email, invitationId)
redis.call('HDEL', pendingInWorkspace, invitationId)
return 1
