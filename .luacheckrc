-- luacheck over the Lua that Redis runs (src/*/lua/**/*.lua). Run it as `npm run lint:lua`
-- (scripts/lint-lua.ts): that adds, per file, the functions its `--- @include`s define as
-- read-only globals, and lets an include file leave its own functions unused.
std = "lua51"
-- What Redis gives a script besides Lua 5.1's standard library.
read_globals = { "redis", "KEYS", "ARGV", "cjson", "cmsgpack", "bit", "struct" }
max_line_length = 120
