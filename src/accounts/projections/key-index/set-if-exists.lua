-- Only for a key that still exists: a late change must not resurrect a deleted key.
if redis.call('EXISTS', record) == 1 then redis.call('HSET', record, field, value) end
