-- The sidebar against the real server: rows as the CLI draws them, the
-- cursor on the leaf, highlights, filters, search, folds and lazy windows.
local H = require("helpers")
local tree = require("pi_sessions.tree")

local function leaf_line()
  return vim.api.nvim_win_get_cursor(tree.win())[1]
end

local function hl_groups_on(lnum)
  local marks = vim.api.nvim_buf_get_extmarks(tree.state.buf, tree.ns, { lnum - 1, 0 }, { lnum - 1, -1 }, { details = true })
  local out = {}
  for _, m in ipairs(marks) do
    out[m[4].hl_group] = true
  end
  return out
end

return {
  { "gutters shared per window expand to each row's own gutters", function()
    H.setup()
    local file = H.shop()
    local render = require("pi_sessions.render")
    for _, filter in ipairs({ "default", "all", "no-tools" }) do
      for _, w in ipairs({ { 0, 1000 }, { 3, 5 } }) do
        local params = { session = file, filter = filter, offset = w[1], limit = w[2] }
        local plain = H.request("pi/getTree", params)
        local shared = H.request("pi/getTree", vim.tbl_extend("force", params, { sharedGutters = true }))
        H.truthy(type(shared.gutterNodes) == "table" and shared.rows[1].gutters == nil, "the shared form")
        H.eq(plain, render.expand_gutters(shared), filter .. " " .. w[1])
      end
    end
  end },
  { "rows equal `pi-server tree`, cursor on the leaf, scratch buffer", function()
    local file = H.shop()
    H.open(file)
    H.eq(H.cli_tree(file), H.lines(), "tree lines")
    local buf = tree.state.buf
    H.eq("pi_tree", vim.bo[buf].filetype)
    H.eq(false, vim.bo[buf].modifiable)
    H.eq("nofile", vim.bo[buf].buftype)
    -- the leaf (a session_info entry) is hidden by the default filter: the
    -- cursor goes to the last row of the active path
    H.eq(H.expected_cursor_id(file), H.cursor_row().id, "cursor on the leaf / end of the active path")
    local header = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
    H.truthy(header:find("filter: default", 1, true), "header names the filter: " .. header)
  end },
  { "highlights: active path, leaf, labels, dimmed tools (filter option all)", function()
    H.setup({ filter = "all" })
    H.open(H.shop())
    H.eq("all", tree.state.filter)
    H.truthy(H.cursor_row().isLeaf, "the leaf is shown in `all` and holds the cursor")
    local lines = H.lines()
    local found = { PiTreeActive = false, PiTreeLeaf = false, PiTreeLabel = false, PiTreeTool = false }
    for i = 1, #lines do
      for g in pairs(hl_groups_on(i + 1)) do
        found[g] = true
      end
    end
    for g, ok in pairs(found) do
      H.truthy(ok, g .. " used")
    end
    local leaf_lnum = leaf_line()
    H.truthy(hl_groups_on(leaf_lnum).PiTreeLeaf, "leaf line uses PiTreeLeaf")
    for i, l in ipairs(lines) do
      if l:find("[bash: pytest -q]", 1, true) then
        H.truthy(hl_groups_on(i + 1).PiTreeTool, "tool row dimmed")
      end
    end
    H.eq({ link = "Comment", default = true }, vim.api.nvim_get_hl(0, { name = "PiTreeTool" }))
  end },
  { "f cycles the filters, each as the CLI draws it", function()
    local file = H.shop()
    H.open(file)
    for _, filter in ipairs({ "no-tools", "user-only", "labeled-only", "all", "default" }) do
      H.press("f")
      H.idle()
      H.eq(filter, tree.state.filter)
      H.eq(H.cli_tree(file, { "--filter", filter }), H.lines(), "filter " .. filter)
    end
  end },
  { "/ searches like --search, empty clears", function()
    local file = H.shop()
    H.open(file)
    H.answer_input("orm")
    H.press("/")
    H.idle()
    local lines = H.lines()
    H.eq(H.cli_tree(file, { "--search", "orm" }), lines, "search orm")
    H.truthy(#lines > 0 and #lines < #H.cli_tree(file), "search narrows the rows")
    H.answer_input("")
    H.press("/")
    H.idle()
    H.eq(H.cli_tree(file), H.lines(), "search cleared")
  end },
  { "a search with one match says 1 row in the header", function()
    local file = H.shop()
    H.open(file)
    H.answer_input("pagination")
    H.press("/")
    H.idle()
    H.eq(H.cli_tree(file, { "--search", "pagination" }), H.lines(), "search pagination")
    H.eq(1, #H.lines(), "one row")
    local header = vim.api.nvim_buf_get_lines(tree.state.buf, 0, 1, false)[1]
    H.truthy(vim.endswith(header, "│ 1 row"), "header: " .. header)
  end },
  { "za folds and unfolds like --fold", function()
    local file = H.shop()
    H.open(file)
    local row = H.row_where(function(r) return r.foldable and r.connector ~= "" end)
    H.truthy(row, "a foldable row")
    H.cursor_to(row.id)
    H.press("za")
    H.idle()
    H.eq(H.cli_tree(file, { "--fold", row.id }), H.lines(), "folded")
    H.eq(row.id, H.cursor_row().id, "cursor stays on the folded row")
    H.press("za")
    H.idle()
    H.eq(H.cli_tree(file), H.lines(), "unfolded")
  end },
  { "rows are fetched in windows as the cursor moves", function()
    H.setup({ page_size = 4 })
    local file = H.shop()
    local calls = {}
    local client = require("pi_sessions.client")
    local orig = client.request
    client.request = function(method, params, cb, opts)
      if method == "pi/getTree" then
        table.insert(calls, { offset = params.offset, limit = params.limit })
      end
      return orig(method, params, cb, opts)
    end
    local ok, err = pcall(function()
      H.open(file)
      for _, c in ipairs(calls) do
        H.truthy(c.limit and c.limit <= 4, "every request is windowed")
      end
      local expected = H.cli_tree(file)
      local lines = H.lines()
      H.eq(#expected, #lines, "one line per row")
      H.eq(H.expected_cursor_id(file), H.cursor_row().id, "cursor found by the windowed search")
      -- walk to the end: every line fills in
      vim.api.nvim_win_set_cursor(tree.win(), { 1, 0 })
      for l = 2, #expected + 1 do
        vim.api.nvim_win_set_cursor(tree.win(), { l, 0 })
        tree.ensure_visible()
        H.idle()
      end
      H.eq(expected, H.lines(), "all rows after scrolling")
    end)
    client.request = orig
    assert(ok, err)
  end },
  { "q closes the sidebar", function()
    H.open(H.shop())
    vim.cmd("vsplit")
    H.press("q")
    H.truthy(not tree.is_open(), "closed")
  end },
}
