-- The store's health check: a script runs at all (Redis answers, and its ACL lets this user run scripts, which every
-- request step is).
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys:
-- argv:
return 1
