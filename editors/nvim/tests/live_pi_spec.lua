-- A session that a running pi holds (docs/protocol.md, "Live sessions"): a
-- second connection to the same daemon plays the pi extension's side, the
-- sidebar's header and the picker mark it, and pi's leaf moves show.
local H = require("helpers")
local tree = require("pi_sessions.tree")
local sessions = require("pi_sessions.sessions")

--- A second connection through its own connector, as pi's extension makes
--- one; `answers[method]` answers the daemon's requests to pi.
local function pi_connection(answers)
  local rpc = vim.lsp.rpc.start(H.server_cmd(), {
    notification = function() end,
    server_request = function(method, params)
      local f = answers[method]
      if f then
        return f(params), nil
      end
      return nil, vim.lsp.rpc.rpc_response_error(-32601, method)
    end,
  }, { env = { HOME = H.home, ANTHROPIC_API_KEY = "" } })
  local function call(method, params)
    local done, res, err = false, nil, nil
    rpc.request(method, params, function(e, r)
      done, res, err = true, r, e
    end)
    H.wait(function() return done end, method)
    assert(not err, method .. ": " .. vim.inspect(err))
    return res
  end
  call("initialize", {
    processId = vim.fn.getpid(),
    capabilities = vim.empty_dict(),
    initializationOptions = { sessionDirs = { H.sessions }, stateDir = H.state },
  })
  rpc.notify("initialized", vim.empty_dict())
  return { call = call, notify = rpc.notify, stop = rpc.terminate }
end

local function header()
  return vim.api.nvim_buf_get_lines(tree.state.buf, 0, 1, false)[1]
end

local function leaf_row()
  return H.row_where(function(r) return r.isLeaf end)
end

local function state(file, over)
  return vim.tbl_extend("force", {
    session = file,
    pid = vim.fn.getpid(),
    leafId = H.request("pi/getTree", { session = file, limit = 1 }).leafId,
    streaming = false,
    model = "anthropic/claude-sonnet-4-5",
    thinkingLevel = "off",
  }, over or {})
end

return {
  { "a live session is marked in the header and the picker, follows pi's state and leaf, and is a file again when pi lets go", function()
    local file = H.shop()
    H.open(file)
    H.truthy(not header():find("live"), "no mark before pi registers")
    local pi = pi_connection({})
    local ok, err = pcall(function()
      local mark = "● live in pi · pid " .. vim.fn.getpid()
      local first = state(file)
      pi.call("pi/live/register", first)
      H.wait(function() return header():find(mark .. " · idle", 1, true) end, "the live mark in the header")
      local listed = H.request("pi/listSessions", {}).sessions
      local texts = vim.tbl_map(function(i) return i.text end, sessions.items(listed))
      H.truthy(vim.iter(texts):any(function(t) return t:find(mark .. " · idle", 1, true) ~= nil end), vim.inspect(texts))

      pi.notify("pi/live/update", state(file, { streaming = true, leafId = first.leafId }))
      H.wait(function() return header():find(mark .. " · streaming", 1, true) end, "streaming in the header")

      -- pi's own /tree moves its leaf: the sidebar's leaf follows
      local target = H.row_where(function(r) return r.role == "user" and not r.onActivePath end)
      pi.notify("pi/live/update", state(file, { leafId = target.id, streaming = false }))
      H.wait(function() return tree.state.leaf_id == target.id and (leaf_row() or {}).id == target.id end, "pi's leaf in the sidebar")
      H.truthy(header():find(mark .. " · idle", 1, true), header())

      pi.notify("pi/live/withdraw", { session = file })
      H.wait(function() return not header():find("live", 1, true) end, "the mark gone when pi lets go")
    end)
    pi.stop()
    assert(ok, err)
  end },
}
