-- Gives the partition up at once (a clean stop, a rebalance).
if redis.call('GET', lease) == token then redis.call('DEL', lease) return 1 end
return 0
