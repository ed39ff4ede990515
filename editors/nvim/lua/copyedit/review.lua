-- Review before apply.
-- The server marks the hunks of an edit it wants confirmed with change annotations that need
-- confirmation (its `review` setting). The handler of workspace/applyEdit then shows each hunk in
-- a floating window over the highlighted lines it replaces and asks, as :s///c does:
--   y  take this hunk       n  leave it
--   a  take it and every hunk after it    q / <Esc>  leave it and every hunk after it
-- and answers the server with what it did: {applied, hunks = the 1-based indices taken}.
-- An apply's hunks show beside each new line where it came from (the file, the change or the
-- model: the server's copyedit/provenance), and a hunk that only removes lines says so.

local util = require('copyedit.util')
local notify, fire = util.notify, util.fire
local plugin = util.plugin

local R = {}

local review_ns = vim.api.nvim_create_namespace('copyedit-review')
vim.api.nvim_set_hl(0, 'CopyEditReviewOld', { default = true, link = 'DiffDelete' })
vim.api.nvim_set_hl(0, 'CopyEditReviewNew', { default = true, link = 'DiffAdd' })
vim.api.nvim_set_hl(0, 'CopyEditReviewSource', { default = true, link = 'Comment' })

-- copyedit/provenance: before an apply's review, where each hunk's new lines come from
-- ({removes, lines = {{source = 'file'|'change'|'gen', line}}}), kept by document until reviewed.
local provenance = {}

function R.provenance_handler(_, params)
  if type(params) == 'table' and params.uri then
    provenance[params.uri] = params.hunks
  end
end

-- The words a review shows beside a new line of an apply: where it came from.
local SOURCE_WORDS = { file = 'kept from the file, line %d', change = 'from the change, line %d', gen = 'written by the model' }

function R.source_words(line)
  return string.format(SOURCE_WORDS[line.source] or line.source, line.line or 0)
end

local function needs_review(edit)
  for _, annotation in pairs(edit.changeAnnotations or {}) do
    if annotation.needsConfirmation then
      return true
    end
  end
  return false
end

-- Every text edit of a WorkspaceEdit in order, with the document it changes.
-- An apply's hunks carry where their lines come from (copyedit/provenance), taken once.
local function hunks_of(edit)
  local hunks = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      local sent = provenance[change.textDocument.uri]
      provenance[change.textDocument.uri] = nil
      for index, text_edit in ipairs(change.edits) do
        table.insert(hunks, { document = change.textDocument, edit = text_edit, sources = sent and sent[index] })
      end
    end
  end
  return hunks
end

local function split(text)
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

-- Show hunk `index` of `hunks`: its old lines highlighted in their buffer, a float with the change.
local function show_hunk(hunks, index, label)
  local hunk = hunks[index]
  local sources = hunk.sources
  local bufnr = vim.uri_to_bufnr(hunk.document.uri)
  vim.fn.bufload(bufnr)
  if vim.api.nvim_get_current_buf() ~= bufnr then
    vim.api.nvim_set_current_buf(bufnr)
  end
  local range = hunk.edit.range
  local first, last = range.start.line, range['end'].line
  local old = vim.api.nvim_buf_get_lines(bufnr, first, math.max(first, last), false)
  vim.api.nvim_buf_clear_namespace(bufnr, review_ns, 0, -1)
  for row = first, math.max(first, last) - 1 do
    vim.api.nvim_buf_add_highlight(bufnr, review_ns, 'CopyEditReviewOld', row, 0, -1)
  end
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  pcall(vim.api.nvim_win_set_cursor, 0, { math.min(first + 1, line_count), 0 })
  local body = {}
  for _, line in ipairs(old) do
    table.insert(body, '- ' .. line)
  end
  local added = split(hunk.edit.newText)
  for _, line in ipairs(added) do
    table.insert(body, '+ ' .. line)
  end
  local title = string.format('copyedit: %s (hunk %d of %d)', label or 'edit', index, #hunks)
  if sources and #sources.lines == 0 then
    title = title .. ': a deletion'
  end
  table.insert(body, 1, title)
  table.insert(body, 'y take  n leave  a take this and the rest  q leave this and the rest')
  local float = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(float, 0, -1, false, body)
  for row = 1, #old do
    vim.api.nvim_buf_add_highlight(float, review_ns, 'CopyEditReviewOld', row, 0, -1)
  end
  for row = #old + 1, #old + #added do
    vim.api.nvim_buf_add_highlight(float, review_ns, 'CopyEditReviewNew', row, 0, -1)
    local line = sources and sources.lines[row - #old]
    if line then -- an apply: where the line came from, after it
      local words = { { '  <- ' .. R.source_words(line), 'CopyEditReviewSource' } }
      vim.api.nvim_buf_set_extmark(float, review_ns, row, 0, { virt_text = words })
    end
  end
  local width = 20
  for _, line in ipairs(body) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  local window = vim.api.nvim_open_win(float, false, {
    relative = 'editor',
    row = 1,
    col = math.max(0, vim.o.columns - width - 4),
    width = math.min(width + 1, math.max(20, vim.o.columns - 2)),
    height = math.min(#body, math.max(3, vim.o.lines - 4)),
    style = 'minimal',
    border = 'single',
  })
  vim.cmd('redraw')
  return function()
    pcall(vim.api.nvim_win_close, window, true)
    pcall(vim.api.nvim_buf_delete, float, { force = true })
    vim.api.nvim_buf_clear_namespace(bufnr, review_ns, 0, -1)
  end
end

-- The keys of the review, one at a time (vim.fn.getchar; tests feed them as typeahead).
function R.key()
  local ok, key = pcall(vim.fn.getchar)
  if not ok then
    return 'q' -- <C-c>: leave the rest
  end
  return type(key) == 'number' and vim.fn.nr2char(key) or key
end

--- Ask about each hunk of `edit`; return the 1-based indices taken.
function R.review(edit, label)
  local hunks = hunks_of(edit)
  local taken, all = {}, false
  for index = 1, #hunks do
    if all then
      table.insert(taken, index)
    else
      local close = show_hunk(hunks, index, label)
      local key
      repeat
        key = plugin().review_key()
      until key == 'y' or key == 'n' or key == 'a' or key == 'q' or key == '\27'
      close()
      if key == 'y' or key == 'a' then
        table.insert(taken, index)
      end
      all = key == 'a'
      if key == 'q' or key == '\27' then
        break
      end
    end
  end
  return taken, hunks
end

-- workspace/applyEdit for copyedit clients: reviewed where the server asks for confirmation.
function R.apply_edit_handler(err, params, ctx, config)
  local default = vim.lsp.handlers['workspace/applyEdit']
  if not (params and params.edit and needs_review(params.edit)) then
    return default(err, params, ctx, config)
  end
  local label = params.label and params.label:gsub('^copyedit: ', '') or nil
  local taken, hunks = R.review(params.edit, label)
  local sources = {}
  for index, hunk in ipairs(hunks) do
    sources[index] = hunk.sources or vim.NIL
  end
  plugin().last_review = { hunks = #hunks, taken = taken, applied = #taken > 0, edit = params.edit, sources = sources }
  fire('CopyEditReviewed')
  if #taken == 0 then
    notify('the edit was rejected: nothing changed')
    return { applied = false, failureReason = 'rejected in review', hunks = {} }
  end
  local kept = {}
  for _, index in ipairs(taken) do
    local hunk = hunks[index]
    local key = hunk.document.uri
    if not kept[key] then
      kept[key] = { textDocument = hunk.document, edits = {} }
      table.insert(kept, kept[key])
    end
    table.insert(kept[key].edits, hunk.edit)
  end
  local changes = {}
  for _, change in ipairs(kept) do
    table.insert(changes, change)
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local ok, problem = pcall(vim.lsp.util.apply_workspace_edit, { documentChanges = changes }, client and client.offset_encoding or 'utf-16')
  if not ok then
    return { applied = false, failureReason = tostring(problem), hunks = {} }
  end
  return { applied = true, hunks = taken }
end

return R
