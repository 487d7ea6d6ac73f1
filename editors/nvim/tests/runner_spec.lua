-- The test runner itself: a server that cannot start fails the run at once,
-- saying why, instead of every test waiting out its deadline.
local H = require("helpers")

-- Run the suite in a child Neovim with `bin` first on PATH (so its
-- `pi-server` is the one the plugin picks by default) and no PI_SERVER_CMD.
local function run_child(bin)
  local t0 = H.now_ms()
  local r = vim.system({ vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", "tests/run.lua" }, {
    cwd = H.plugin_dir,
    text = true,
    env = { PATH = bin .. ":" .. (vim.env.PATH or ""), PI_SERVER_CMD = "", PI_TEST_FILTER = "tree: rows equal" },
  }):wait(120000)
  return r, H.now_ms() - t0
end

local function script(path, body)
  vim.fn.writefile(vim.split("#!/bin/sh\n" .. body, "\n"), path)
  vim.fn.setfperm(path, "rwxr-xr-x")
end

return {
  { "a pi-server on PATH that cannot start fails the run in seconds, with its error", function()
    local bin = H.root .. "/bin"
    vim.fn.mkdir(bin, "p")
    script(bin .. "/pi-server", "echo 'ModuleNotFoundError: No module named pygls' >&2\nexit 1")
    local r, ms = run_child(bin)
    local out = r.stdout .. r.stderr
    H.truthy(r.code ~= 0, "the run fails: " .. out)
    H.truthy(ms < 10000, ("the run ends within seconds, not %d ms"):format(ms))
    H.truthy(out:find(bin .. "/pi-server", 1, true), "names the command it started: " .. out)
    H.truthy(out:find("No module named pygls", 1, true), "gives the server's own error: " .. out)
    H.truthy(out:find("0 passed, 1 failed", 1, true), out)
  end, timeout = 60000 },
  { "the plugin shows why its server died: the last line of `cmd --version`", function()
    local bin = H.root .. "/bin"
    vim.fn.mkdir(bin, "p")
    script(bin .. "/pi-server", "echo 'Traceback (most recent call last):' >&2\necho 'ModuleNotFoundError: No module named pygls' >&2\nexit 1")
    H.setup({ cmd = { bin .. "/pi-server" } })
    vim.cmd("PiSessions")
    -- not H.wait: it stops at the first "exited" message, and this one follows it
    local said = vim.wait(5000, function()
      for _, e in ipairs(H.errors()) do
        if e:find("--version` says: ModuleNotFoundError: No module named pygls", 1, true) then
          return true
        end
      end
    end, 20)
    H.truthy(said, "the reason shown: " .. table.concat(H.errors(), "\n"))
  end },
  { "a pi-server that answers --version but dies on start fails fast too", function()
    local bin = H.root .. "/bin"
    vim.fn.mkdir(bin, "p")
    script(bin .. "/pi-server", '[ "$1" = --version ] && { echo "pi-server 0.0"; exit 0; }\necho "cannot bind" >&2\nexit 4')
    local r, ms = run_child(bin)
    local out = r.stdout .. r.stderr
    H.truthy(r.code ~= 0, "the run fails: " .. out)
    H.truthy(ms < 15000, ("the run ends within seconds, not %d ms"):format(ms))
    H.truthy(out:find("did not answer pi/listSessions", 1, true), out)
    H.truthy(out:find("code 4", 1, true), "the exit code is given: " .. out)
    H.truthy(out:find("cannot bind", 1, true), "and the server's own error: " .. out)
  end, timeout = 60000 },
}
