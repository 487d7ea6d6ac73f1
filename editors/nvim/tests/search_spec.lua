-- :PiSearch against the real server's pi/search: the picker, the quickfix
-- list, and the sidebar opened at the hit's row.
local H = require("helpers")
local search = require("pi_sessions.search")
local tree = require("pi_sessions.tree")

local function ci()
  return vim.fs.normalize(vim.fn.glob(H.sessions .. "/--home-demo-shop--/2026-11-30T09-02-08*.jsonl"))
end

-- Runs :PiSearch, answering the picker with the hit of `entry`; returns the
-- picker's lines.
local function pick(query, entry)
  local texts
  H.answer_select(function(hit, text)
    texts = texts or {}
    table.insert(texts, text)
    return hit.entryId == entry
  end)
  vim.cmd("PiSearch " .. query)
  H.wait(function()
    return texts ~= nil and tree.is_open() and tree.is_idle() and tree.current_row() ~= nil
      and tree.current_row().id == entry
  end, "the sidebar at " .. entry)
  return texts
end

return {
  { "a snippet's matches are marked by character, in any script", function()
    local hit = { snippet = "日本語 the 東京 𝄞 tower\nand more", ranges = { { 8, 10 }, { 11, 13 }, { 0, 3 } } }
    H.eq("«日本語» the «東京» «𝄞» tower and more", search.marked(hit)) -- UTF-16 offsets: 𝄞 counts 2
    local long = { snippet = ("x"):rep(100) .. " check the healthcheck", ranges = { { 111, 122 } } }
    H.eq("…" .. ("x"):rep(29) .. " check the «healthcheck»", search.marked(long))
    H.eq("no match", search.marked({ snippet = "no match", ranges = {} }))
  end },
  { "the picker's count is marked when the server stopped counting before the end", function()
    local prompts = {}
    vim.ui.select = function(_, o, cb)
      table.insert(prompts, o.prompt)
      cb(nil)
    end
    local hit = { session = ci(), entryId = "9ef4e3a8", type = "message", role = "user", timestamp = "2026-11-30T09:02:19.000Z",
      snippet = "healthcheck", ranges = {}, firstMessage = "Why?" }
    local result = { hits = { hit }, total = 302, indexedFiles = 3, pendingFiles = 0 }
    search.show("healthcheck", result, {})
    search.show("healthcheck", vim.tbl_extend("force", result, { totalAtLeast = true }), {})
    search.show("healthcheck", vim.tbl_extend("force", result, { total = 1 }), {})
    H.eq({ "pi search: healthcheck (302 hits)", "pi search: healthcheck (302+ hits)", "pi search: healthcheck (1 hit)" }, prompts)
  end },
  { ":PiSearch WORDS fills the quickfix list and the picker; the chosen hit opens the sidebar at its row", function()
    local texts = pick("healthcheck", "9ef4e3a8")
    H.eq(ci(), tree.state.session)
    H.eq(tree.win(), vim.api.nvim_get_current_win())
    local line = vim.tbl_filter(function(t) return t:find("9ef4e3a8", 1, true) or t:find("«healthcheck»", 1, true) end, texts)[1]
    H.truthy(line and line:find("^2026%-11%-30 09:02  assistant") and line:find("Why does `make test` hang on CI?", 1, true), vim.inspect(texts))
    local qf = vim.fn.getqflist({ title = 1, items = 1 })
    H.eq("pi search: healthcheck", qf.title)
    H.eq(#texts, #qf.items)
    local item = vim.tbl_filter(function(i) return i.user_data.entryId == "9ef4e3a8" end, qf.items)[1]
    H.truthy(item, vim.inspect(qf.items))
    H.eq(ci(), vim.fs.normalize(vim.api.nvim_buf_get_name(item.bufnr)))
    H.truthy(item.text:lower():find("«healthcheck»", 1, true), item.text)
  end },
  { "a hit past the first window of rows is found, and a hit the filter hides opens under 'all'", function()
    H.setup({ page_size = 4 })
    pick("pagination", "cbbdd4d3")
    H.eq(vim.fs.normalize(H.shop()), tree.state.session)
    H.eq("default", tree.state.filter)
    pick("orm-dead-end", "560e7b0b")
    H.eq("all", tree.state.filter)
  end },
  { "<CR> in the quickfix window opens the hit's row (a tool call's: its result's); the quickfix list jumps to the entry's line", function()
    vim.ui.select = function(_, _, cb) cb(nil) end
    vim.cmd("PiSearch pytest")
    H.wait(function() return vim.fn.getqflist({ title = 1 }).title == "pi search: pytest" end, "the quickfix list")
    local items = vim.fn.getqflist({ items = 1 }).items
    local n
    for i, it in ipairs(items) do
      if it.user_data.entryId == "3e210a28" then
        n = i
      end
    end
    H.truthy(n, vim.inspect(items))
    vim.cmd("cc " .. n) -- the usual jump: the session file at the entry's line
    H.truthy(vim.api.nvim_get_current_line():find('"id":"3e210a28"', 1, true), vim.api.nvim_get_current_line())
    vim.cmd("copen")
    vim.api.nvim_win_set_cursor(0, { n, 0 })
    local map = vim.fn.maparg("<CR>", "n", false, true)
    H.truthy(map.buffer == 1 and map.desc and map.desc:find("PiSearch", 1, true), vim.inspect(map))
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
    -- pi draws no row for a tool call (3e210a28): the cursor goes to its result's row
    H.wait(function()
      return tree.is_open() and tree.is_idle() and tree.current_row() ~= nil and tree.current_row().id == "6b297a01"
    end, "the sidebar at the call's result")
    H.eq(vim.fs.normalize(H.shop()), tree.state.session)
  end },
  { "no hit, and a query the server cannot read, are said in one message", function()
    local asked = false
    vim.ui.select = function() asked = true end
    vim.cmd("PiSearch zzqqxxnotthere")
    H.wait(function()
      return #vim.tbl_filter(function(n) return n.msg:find("no entry matches zzqqxxnotthere", 1, true) end, H.notes()) > 0
    end, "the no-hit message")
    vim.cmd("PiSearch re:(unclosed")
    H.wait(function() return #H.errors() > 0 end, "the error")
    H.truthy(H.errors()[1]:find("pi/search", 1, true), H.errors()[1])
    H.truthy(not asked, "no picker")
  end },
}
