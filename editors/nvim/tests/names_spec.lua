-- A session file whose name is not UTF-8 (b"caf\xe9.jsonl", a Latin-1 name):
-- the server sends it as its file: URI with a displayPath. The plugin lists
-- it, opens its tree, acts on it, follows its updates and opens the file.
local H = require("helpers")
local names = require("pi_sessions.names")
local tree = require("pi_sessions.tree")

local CAFE = "caf\233.jsonl" -- the Latin-1 byte é: not UTF-8
local SHOWN = "caf\239\191\189.jsonl" -- as shown: U+FFFD in its place

-- The shop sample renamed to that name; returns its path (bytes) and URI.
local function cafe()
  local dir = H.sessions .. "/--home-demo-shop--"
  local path = dir .. "/" .. CAFE
  assert(vim.uv.fs_rename(H.shop(), path))
  return path, "file://" .. dir .. "/caf%E9.jsonl"
end

local function listed(uri)
  for _, s in ipairs(H.request("pi/listSessions", {}).sessions) do
    if s.session == uri then
      return s
    end
  end
end

-- :PiSessions, choosing the item of `uri`; returns the picker's lines.
local function pick(uri)
  local texts = {}
  H.answer_select(function(item, text)
    table.insert(texts, text)
    return item.info.session == uri
  end)
  vim.cmd("PiSessions")
  H.wait(function() return tree.is_open() and tree.is_idle() and tree.state.total > 0 end, "the sidebar on it")
  vim.api.nvim_set_current_win(tree.win())
  return texts
end

return {
  { "the plugin reads a file: URI and a name as the server does", function()
    local path, uri = cafe()
    local info = H.truthy(listed(uri), "listed by its URI")
    H.eq(info.displayPath, names.display_path(uri), "the URI decoded as the server shows it")
    H.eq(H.sessions .. "/--home-demo-shop--/" .. SHOWN, info.displayPath)
    H.eq(path, names.path(uri))
    H.eq(uri, names.to_session(path))
    H.eq(uri, names.session(uri))
    H.truthy(names.same(uri, path) and names.same(path, uri), "a URI and its path are the same file")
    H.eq(SHOWN, names.display_name(uri))
    -- b"x\xed\xa0\x80y\xf0\x9f".decode("utf-8", "replace") == "x\ufffd\ufffd\ufffdy\ufffd" in Python
    local r = "\239\191\189"
    H.eq("x" .. r .. r .. r .. "y" .. r, names.replace_invalid("x\237\160\128y\240\159"), "as Python's replace")
    H.eq(nil, names.uri_path("file://host/x.jsonl"))
  end },
  { ":PiSessions lists it; choosing it shows its tree, named in the header", function()
    local path, uri = cafe()
    local texts = pick(uri)
    H.eq(3, #texts, vim.inspect(texts))
    H.truthy(vim.tbl_contains(vim.tbl_map(function(t) return t:match("^orders repository refactor") end, texts), "orders repository refactor"), vim.inspect(texts))
    H.eq(uri, tree.state.session, "the session kept as the server sent it")
    H.eq(H.cli_tree(path), H.lines(), "the rows the CLI draws for that file")
    local header = vim.api.nvim_buf_get_lines(tree.state.buf, 0, 1, false)[1]
    H.truthy(header:find("^orders repository refactor"), header)
    H.eq({}, H.errors())
  end },
  { ":PiTree with the URI, and with the path as bytes, opens it; the header names it by its file until the list says more", function()
    local path, uri = cafe()
    tree.open(uri)
    local header = vim.api.nvim_buf_get_lines(tree.state.buf, 0, 1, false)[1]
    H.truthy(header:find("^caf\239\191\189 "), header)
    H.wait(function() return tree.state.total > 0 and tree.is_idle() end, "the tree")
    H.eq(H.cli_tree(path), H.lines())
    tree.close_all()
    vim.cmd("PiTree " .. vim.fn.fnameescape(path))
    H.wait(function() return tree.is_open() and tree.state.total > 0 and tree.is_idle() end, "the tree by path")
    H.eq(uri, tree.state.session)
    H.eq(H.cli_tree(path), H.lines())
    H.eq({}, H.errors())
  end },
  { "L labels an entry of it and <CR> switches its branch", function()
    local path, uri = cafe()
    pick(uri)
    local row = H.truthy(H.row_where(function(r) return r.title == "user: Run the tests." end), "the row")
    H.cursor_to(row.id)
    H.answer_input("café")
    H.press("L")
    H.wait(function() return H.last_entry(path).type == "label" end, "the label in the file")
    H.eq("café", H.last_entry(path).label)
    H.eq(row.id, H.last_entry(path).targetId)
    H.idle()
    H.wait(function() return vim.tbl_contains(H.lines(), "│     • [café] user: Run the tests.") end, "the label drawn")
    local other = H.truthy(H.row_where(function(r) return r.title:find("^assistant: The ORM route") end), "a row off the path")
    H.cursor_to(other.id)
    H.answer_select(function(item) return item.key == "plain" end)
    H.press("<CR>")
    H.wait(function() return H.request("pi/getTree", { session = uri, limit = 1 }).leafId == other.id end, "leaf moved")
    H.idle()
    H.eq(H.cli_tree(path, { "--leaf", other.id }), H.lines())
    H.eq({}, H.errors())
  end },
  { "an entry appended by another writer shows up (pi/sessionUpdated matched by its URI)", function()
    local path, uri = cafe()
    pick(uri)
    local leaf = H.request("pi/getTree", { session = uri, limit = 1 }).leafId
    local entry = {
      type = "message", id = "cafe0001", parentId = leaf, timestamp = "2026-12-01T00:00:00.000Z",
      message = { role = "user", content = { { type = "text", text = "Un café" } }, timestamp = 1 },
    }
    local f = assert(io.open(path, "a"))
    f:write(vim.json.encode(entry) .. "\n")
    f:close()
    H.wait(function() return H.row_where(function(r) return r.id == "cafe0001" end) ~= nil end, "the appended row")
    H.idle()
    H.eq(H.cli_tree(path), H.lines())
  end },
  { ":PiSearch hits in it open the file itself; :PiContext works from that buffer", function()
    local path, uri = cafe()
    vim.ui.select = function(_, _, cb) cb(nil) end
    local asked = 0
    H.wait(function()
      if H.now_ms() - asked < 500 then
        return false -- the index is built between requests: ask twice a second
      end
      asked = H.now_ms()
      vim.cmd("silent PiSearch Alembic")
      local items = vim.fn.getqflist({ items = 1 }).items
      return #items > 0 and items[1].user_data.session == uri
    end, "hits in the file")
    vim.cmd("silent cfirst")
    H.eq(path, vim.api.nvim_buf_get_name(0), "a buffer for the path as bytes")
    H.eq(vim.fn.readfile(path), vim.api.nvim_buf_get_lines(0, 0, -1, false))
    H.truthy(vim.api.nvim_get_current_line():find('"id":"' .. vim.fn.getqflist({ items = 1 }).items[1].user_data.entryId, 1, true))
    vim.cmd("PiContext")
    H.wait(function() return vim.bo.filetype == "json" end, "the context buffer")
    H.truthy(vim.api.nvim_buf_get_name(0):find("pi-context://caf\239\191\189/", 1, true), vim.api.nvim_buf_get_name(0))
    local shown = vim.json.decode(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"), { luanil = { object = true } })
    H.eq(vim.json.decode(H.cli({ "context", path }), { luanil = { object = true } }), shown)
    H.eq({}, H.errors())
  end },
}
