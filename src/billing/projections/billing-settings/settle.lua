-- Clears the in-flight marker if it is this reload's (an outcome of an older reload changes nothing).
if redis.call('HGET', settings, 'inFlight') == reloadId then
  redis.call('HDEL', settings, 'inFlight', 'inFlightSince')
  redis.call('SREM', inflight, wsId)
end
