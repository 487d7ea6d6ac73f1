-- How the sidebar is built: one per tabpage, live subscriptions only while
-- one is open, keys mapped to named actions with their descriptions.
local H = require("helpers")
local client = require("pi_sessions.client")
local keymaps = require("pi_sessions.tree.keymaps")
local tree = require("pi_sessions.tree")

local function notes_file()
  return vim.fn.glob(H.sessions .. "/--home-demo-notes--/*.jsonl")
end

local function buf_maps(buf)
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_keymap(buf, "n")) do
    out[m.lhs] = m.desc
  end
  return out
end

return {
  { "each tabpage has its own sidebar, filter and buffer", function()
    local shop, notes = H.shop(), notes_file()
    H.open(shop)
    local first_buf = tree.state.buf
    vim.cmd("tabnew")
    H.eq(false, tree.is_open(), "a new tab starts without a sidebar")
    H.open(notes)
    local second_buf = tree.state.buf
    H.truthy(second_buf ~= first_buf, "a buffer of its own")
    H.eq(vim.fs.normalize(notes), tree.state.session)
    H.eq(H.cli_tree(notes), H.lines(), "the second tab shows its session")
    vim.cmd("tabprevious")
    H.eq(vim.fs.normalize(shop), tree.state.session)
    H.eq(H.cli_tree(shop), H.lines(), "the first tab still shows its own")
    H.press("f")
    H.idle()
    H.eq("no-tools", tree.state.filter)
    vim.cmd("tabnext")
    H.eq("default", tree.state.filter, "a filter change stays in its tab")
    vim.cmd("tabclose")
    H.wait(function() return not vim.api.nvim_buf_is_valid(second_buf) end, "closing a tab wipes its sidebar", 2000)
    H.eq(vim.fs.normalize(shop), tree.state.session)
  end },
  { "live subscriptions are made when a sidebar opens and dropped when it closes", function()
    H.eq(0, client.listener_count("pi/sessionUpdated"), "loading the plugin subscribes nothing")
    H.eq(0, client.listener_count("pi/sessionsChanged"))
    H.open(H.shop())
    H.eq(1, client.listener_count("pi/sessionUpdated"))
    H.eq(1, client.listener_count("pi/sessionsChanged"))
    vim.cmd("tabnew")
    H.open(notes_file())
    H.eq(2, client.listener_count("pi/sessionUpdated"), "one per open sidebar")
    tree.close()
    H.eq(1, client.listener_count("pi/sessionUpdated"), "closing drops its subscriptions")
    vim.cmd("tabclose")
    tree.close()
    H.eq(0, client.listener_count("pi/sessionUpdated"))
    H.eq(0, client.listener_count("pi/sessionsChanged"))
  end },
  { "keys map to named actions with their desc; keymaps adds and drops keys", function()
    for name, action in pairs(tree.actions) do
      if type(action) == "table" then
        H.truthy(type(action.desc) == "string" and action.desc ~= "", name .. " has a desc")
        H.truthy(type(action.callback) == "function", name .. " has a callback")
      end
    end
    H.setup({ keymaps = { ["<CR>"] = false, gl = "label" } })
    local file = H.shop()
    H.open(file)
    local maps = buf_maps(tree.state.buf)
    H.eq(nil, maps["<CR>"], "<CR> dropped")
    H.eq("pi: " .. tree.actions.label.desc, maps["gl"], "gl added")
    H.eq("pi: " .. tree.actions.label.desc, maps["L"], "the default L kept")
    H.eq("pi: " .. tree.actions.fold.desc, maps["za"])
    local row = H.row_where(function(r) return r.title:find("^user: Run the tests") end)
    H.cursor_to(row.id)
    H.answer_input("via gl")
    H.press("gl")
    H.wait(function()
      for _, r in ipairs(H.request("pi/getTree", { session = file, filter = "all" }).rows) do
        if r.id == row.id then
          return r.label == "via gl"
        end
      end
    end, "the label written through the new key")
    H.idle()
  end },
  { ":checkhealth names a key mapped to no action", function()
    H.setup({ keymaps = { gx = "nope" } })
    vim.cmd("silent checkhealth pi_sessions")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    H.truthy(text:find("keys mapped to no action: gx -> nope", 1, true), text)
  end },
  { "the help file documents the actions (:helptags)", function()
    local tmp = H.root .. "/doc"
    vim.fn.mkdir(tmp, "p")
    vim.fn.writefile(vim.fn.readfile(H.plugin_dir .. "/doc/pi_sessions.txt"), tmp .. "/pi_sessions.txt")
    vim.cmd("helptags " .. vim.fn.fnameescape(tmp))
    local names = vim.tbl_map(function(l) return vim.split(l, "\t")[1] end, vim.fn.readfile(tmp .. "/tags"))
    H.truthy(vim.tbl_contains(names, "pi_sessions-actions"), "tag pi_sessions-actions")
    local text = table.concat(vim.fn.readfile(tmp .. "/pi_sessions.txt"), "\n")
    for name, action in pairs(tree.actions) do
      if type(action) == "table" then
        H.truthy(text:find("`" .. name .. "`", 1, true), "action " .. name .. " documented")
      end
    end
  end },
  { "keymaps written action = key still work", function()
    local resolved = keymaps.resolve(vim.tbl_extend("force", require("pi_sessions.config").defaults.keymaps, { label = "M", yank = false }))
    H.eq("label", resolved.M)
    H.eq(nil, resolved.L, "the action moved off its default key")
    H.eq(nil, resolved.y, "a dropped action has no key")
    H.eq("switch", resolved["<CR>"])
  end },
}
