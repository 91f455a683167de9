-- ARGV from restFrom on: key, unix seconds; repeated.
for i = restFrom, #ARGV, 2 do
  redis.call('EXPIREAT', ARGV[i], ARGV[i + 1])
end
return 1
