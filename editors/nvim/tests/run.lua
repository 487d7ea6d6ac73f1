-- Test runner: loads every tests/*_spec.lua, runs each test with a deadline,
-- prints failures and a final "N passed, N failed" line.
local here = debug.getinfo(1, "S").source:sub(2)
local tests_dir = vim.fs.dirname(vim.fn.fnamemodify(here, ":p"))
local plugin_dir = vim.fs.dirname(tests_dir)
vim.opt.rtp:prepend(plugin_dir)
package.path = tests_dir .. "/?.lua;" .. package.path
vim.cmd("runtime plugin/pi_sessions.lua")

local H = require("helpers")
local function print(s)
  io.stdout:write(tostring(s) .. "\n")
end
H.plugin_dir = plugin_dir

-- A server that cannot start would make every test wait out its deadline:
-- say why at once instead.
local t_pre = vim.uv.hrtime()
local why = H.preflight()
if why then
  print("cannot start the server: " .. why)
  print(("\n0 passed, 1 failed (%.1f s)"):format((vim.uv.hrtime() - t_pre) / 1e9))
  io.stdout:flush()
  os.exit(1)
end

local only = os.getenv("PI_TEST_FILTER")
local files = vim.fn.glob(tests_dir .. "/*_spec.lua", false, true)
table.sort(files)

local passed, failed, failures = 0, 0, {}
local started = vim.uv.hrtime()
for _, file in ipairs(files) do
  local ok, spec = pcall(dofile, file)
  local fname = vim.fn.fnamemodify(file, ":t")
  if not ok then
    failed = failed + 1
    table.insert(failures, fname .. ": could not load: " .. tostring(spec))
    print("FAIL " .. fname .. " (load): " .. tostring(spec))
  else
    for _, case in ipairs(spec) do
      local name = fname:gsub("_spec%.lua$", "") .. ": " .. case[1]
      if not only or name:find(only, 1, true) then
        local t0 = vim.uv.hrtime()
        H.before(case.timeout or 30000)
        local ok2, err = xpcall(case[2], function(e)
          return debug.traceback(tostring(e), 2)
        end)
        local ok3, err3 = pcall(H.after)
        if ok2 and not ok3 then
          ok2, err = false, "cleanup: " .. tostring(err3)
        end
        local ms = math.floor((vim.uv.hrtime() - t0) / 1e6)
        if ok2 then
          passed = passed + 1
          print(("ok   %s (%d ms)"):format(name, ms))
        else
          failed = failed + 1
          table.insert(failures, name .. "\n" .. tostring(err))
          print(("FAIL %s (%d ms)\n%s"):format(name, ms, tostring(err)))
        end
      end
    end
  end
end

if #failures > 0 then
  print("\nFailures:")
  for _, f in ipairs(failures) do
    print("- " .. f:gsub("\n.*", ""))
  end
end
print(("\n%d passed, %d failed (%.1f s)"):format(passed, failed, (vim.uv.hrtime() - started) / 1e9))
io.stdout:flush()
os.exit(failed == 0 and passed > 0 and 0 or 1)
