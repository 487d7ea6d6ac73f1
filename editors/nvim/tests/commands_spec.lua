-- User commands, the LSP features on session files, health, help tags, and
-- a missing server.
local H = require("helpers")
local tree = require("pi_sessions.tree")

return {
  { ":PiSessions lists sessions with forks indented and opens the chosen one", function()
    local file = H.shop()
    local fork = H.request("pi/fork", { session = file, leafId = H.request("pi/getTree", { session = file, limit = 1 }).leafId }).session
    H.wait(function()
      return #H.request("pi/listSessions", {}).sessions == 4
    end, "the fork listed")
    local texts
    H.answer_select(function(item, text, i)
      texts = texts or {}
      table.insert(texts, text)
      return item.info and vim.fs.normalize(item.info.session) == vim.fs.normalize(fork)
    end)
    vim.cmd("PiSessions")
    H.wait(function() return tree.is_open() and tree.is_idle() and tree.state.total > 0 end, "sidebar on the fork")
    H.eq(vim.fs.normalize(fork), tree.state.session)
    -- the parent is named "orders repository refactor"; its fork follows it, indented
    local parent_i, fork_i
    for i, t in ipairs(texts) do
      if t:find("^orders repository refactor") then
        parent_i = i
      end
      if t:find("^  ↳ ") then
        fork_i = i
      end
    end
    H.truthy(parent_i and fork_i, vim.inspect(texts))
    H.truthy(texts[parent_i]:find("~?/home/demo/shop") and texts[parent_i]:find("ago$"), texts[parent_i])
    H.truthy(fork_i > parent_i, "fork after its parent")
    H.eq(H.cli_tree(fork), H.lines())
  end },
  { ":PiSessions WORDS passes the query", function()
    local seen
    vim.ui.select = function(items, opts, cb)
      seen = vim.tbl_map(function(i) return opts.format_item(i) end, items)
      cb(nil)
    end
    vim.cmd("PiSessions alembic")
    H.wait(function() return seen ~= nil end, "the picker")
    H.eq(1, #seen, vim.inspect(seen))
    H.truthy(seen[1]:find("^orders repository refactor"), seen[1])
  end },
  { ":PiContext [format] opens the context JSON of the leaf / entry under the cursor", function()
    local file = H.shop()
    H.open(file)
    vim.cmd("wincmd p")
    local wins, main = #vim.api.nvim_tabpage_list_wins(0), vim.api.nvim_get_current_win()
    vim.cmd("PiContext")
    H.wait(function() return vim.bo.filetype == "json" end, "context buffer")
    local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    local shown = vim.json.decode(table.concat(lines, "\n"), { luanil = { object = true } })
    H.eq(vim.json.decode(H.cli({ "context", file }), { luanil = { object = true } }), shown)
    -- in the wide main window, not a split under the sidebar
    H.eq(wins, #vim.api.nvim_tabpage_list_wins(0))
    H.truthy(vim.api.nvim_get_current_win() ~= tree.win(), "not the sidebar")
    H.eq(main, vim.api.nvim_get_current_win())
    -- the messages first, entryIds after them
    H.eq('  "messages": [', lines[2])
    local entry_ids
    for i, l in ipairs(lines) do
      if l == '  "entryIds": [' then
        entry_ids = i
      end
    end
    H.truthy(entry_ids and entry_ids > #lines - #shown.entryIds - 20, "entryIds near the end: " .. tostring(entry_ids))
    local context_buf = vim.api.nvim_get_current_buf()
    vim.cmd("normal q") -- back to what the window showed
    H.truthy(vim.api.nvim_get_current_buf() ~= context_buf, "q leaves the context")
    H.eq(wins, #vim.api.nvim_tabpage_list_wins(0))
    local row = H.row_where(function(r) return r.title:find("^user: Run the tests") end)
    vim.api.nvim_set_current_win(tree.win())
    H.cursor_to(row.id)
    vim.cmd("PiContext llm")
    H.wait(function() return vim.bo.filetype == "json" end, "llm context buffer")
    H.eq(main, vim.api.nvim_get_current_win()) -- asked from the sidebar: shown in the main window too
    shown = vim.json.decode(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"), { luanil = { object = true } })
    H.eq(vim.json.decode(H.cli({ "context", file, "--leaf", row.id, "--format", "llm" }), { luanil = { object = true } }), shown)
  end },
  { ":PiRename names the session, :PiCompact compacts it", function()
    -- pi 1.6.0 keeps the last 20,000 tokens uncompacted: the sample is smaller (server_options reach the server)
    H.setup({ server_options = { compaction = { keepRecentTokens = 1 } } })
    local file = H.shop()
    H.open(file)
    vim.cmd("PiRename better name")
    H.wait(function()
      for _, s in ipairs(H.request("pi/listSessions", {}).sessions) do
        if vim.fs.normalize(s.session) == vim.fs.normalize(file) and s.name == "better name" then
          return true
        end
      end
    end, "the new name")
    H.wait(function()
      return vim.api.nvim_buf_get_lines(tree.state.buf, 0, 1, false)[1]:find("better name", 1, true) ~= nil
    end, "the header shows the name")
    vim.cmd("PiCompact keep the pagination details")
    H.wait(function()
      local entries = H.read_entries(file)
      return entries[#entries].type == "compaction"
    end, "a compaction entry", 20000)
    H.idle()
    H.eq(0, #H.errors(), table.concat(H.errors(), "\n"))
  end },
  { "session files get the LSP features: symbols, hover, definition", function()
    local file = H.shop()
    vim.cmd("edit " .. vim.fn.fnameescape(file))
    local buf = vim.api.nvim_get_current_buf()
    H.wait(function()
      return #vim.lsp.get_clients({ bufnr = buf, name = "pi_sessions" }) == 1
    end, "the client attached")
    local client = vim.lsp.get_clients({ bufnr = buf, name = "pi_sessions" })[1]
    H.wait(function() return client.initialized end, "initialized")
    local uri = vim.uri_from_bufnr(buf)
    local res = client:request_sync("textDocument/documentSymbol", { textDocument = { uri = uri } }, 10000, buf)
    H.truthy(res and res.result and #res.result > 0, "document symbols")
    -- line 3 (0-based 2) is an entry with a parentId: definition jumps to its parent
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local entry = vim.json.decode(lines[3])
    local col = lines[3]:find('"parentId"', 1, true) + 12
    local def = client:request_sync("textDocument/definition", { textDocument = { uri = uri }, position = { line = 2, character = col } }, 10000, buf)
    H.truthy(def and def.result, "definition result")
    local loc = def.result[1] or def.result
    local target = vim.json.decode(lines[(loc.range or loc.targetRange).start.line + 1])
    H.eq(entry.parentId, target.id)
    local hover = client:request_sync("textDocument/hover", { textDocument = { uri = uri }, position = { line = 2, character = 2 } }, 10000, buf)
    H.truthy(hover and hover.result and hover.result.contents, "hover")
  end },
  { ":checkhealth pi_sessions reports no errors", function()
    H.request("pi/listSessions", {})
    vim.cmd("silent checkhealth pi_sessions")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    H.truthy(text:find("pi-server 0", 1, true), text)
    H.truthy(text:find("OK", 1, true), text)
    H.truthy(not text:find("ERROR", 1, true), text)
  end },
  { ":checkhealth counts the session files the server lists, in a flat folder too", function()
    local flat = H.root .. "/flat"
    vim.fn.mkdir(flat .. "/deeper/still", "p")
    vim.fn.mkdir(flat .. "/.hidden", "p")
    local files = vim.fn.globpath(H.sessions, "*/*.jsonl", false, true)
    for i, f in ipairs(files) do
      local into = ({ flat, flat .. "/deeper/still", flat })[i] or flat
      vim.fn.writefile(vim.fn.readfile(f, "b"), into .. "/" .. vim.fs.basename(f), "b")
    end
    vim.fn.writefile(vim.fn.readfile(files[1], "b"), flat .. "/.hidden/skipped.jsonl", "b")
    H.setup({ sessions_dirs = { flat } })
    local listed = #H.request("pi/listSessions", {}).sessions
    H.eq(#files, listed)
    vim.cmd("silent checkhealth pi_sessions")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    H.truthy(text:find(("%s exists (%d session files)"):format(vim.fs.normalize(flat), listed), 1, true), text)
  end },
  { "the help file passes :helptags", function()
    local doc = H.plugin_dir .. "/doc"
    local tmp = H.root .. "/doc"
    vim.fn.mkdir(tmp, "p")
    vim.fn.writefile(vim.fn.readfile(doc .. "/pi_sessions.txt"), tmp .. "/pi_sessions.txt")
    vim.cmd("helptags " .. vim.fn.fnameescape(tmp))
    local tags = vim.fn.readfile(tmp .. "/tags")
    local names = vim.tbl_map(function(l) return vim.split(l, "\t")[1] end, tags)
    for _, want in ipairs({ "pi_sessions.txt", ":PiSessions", ":PiTree", ":PiContext", "pi_sessions-keys", "pi_sessions-options" }) do
      H.truthy(vim.tbl_contains(names, want), "tag " .. want)
    end
  end },
  { "a missing server command is a clear message, not a hang", function()
    H.setup({ cmd = { "/nonexistent/pi-server" } })
    local t0 = H.now_ms()
    vim.cmd("PiSessions")
    H.wait(function() return #H.errors() > 0 end, "an error", 3000)
    H.truthy(H.errors()[1]:find("not found", 1, true), H.errors()[1])
    H.setup({ cmd = { "python3", "-c", "import sys; sys.exit(3)" } })
    vim.cmd("PiSessions")
    H.wait(function()
      for _, e in ipairs(H.errors()) do
        if e:find("exited", 1, true) then
          return true
        end
      end
    end, "the exit reported", 5000)
    H.truthy(H.now_ms() - t0 < 6000, "fast")
  end },
}
