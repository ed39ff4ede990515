-- copyedit-lsp for Neovim: starts the server, asks for instructions, shows progress and results.
--
-- Works on Neovim 0.7.2 (Debian bookworm) and later: on 0.7 the client is started with
-- vim.lsp.start_client and attached with vim.lsp.buf_attach_client from a FileType autocmd;
-- where vim.lsp.start exists (0.8+) it is used instead.

local M = {}

M.name = 'copyedit'
M.EDIT = 'copyedit.edit'
M.REFACTOR = 'copyedit.refactorWorkspace'
M.CANCEL = 'copyedit.cancel'

M.defaults = {
  cmd = { 'copyedit-lsp' },
  filetypes = { 'python', 'javascript', 'typescript', 'javascriptreact', 'typescriptreact' },
  init_options = {},
  root_markers = { '.git', 'pyproject.toml', 'setup.py', 'package.json', 'tsconfig.json' },
  -- how progress is shown: 'echo' (the command line), 'notify' (vim.notify) or false
  progress = 'echo',
  -- while an edit runs, dim the lines the model copies and mark where it writes new ones
  live = true,
}

M.config = nil
M.last_result = nil -- the last response of copyedit.edit or copyedit.refactorWorkspace
M.last_error = nil -- the last error response, or nil
M.last_progress = nil -- the last $/progress value from a copyedit server, with its token
M.last_cancel = nil -- the last response of copyedit.cancel: {cancelled = n}
M.pending = 0 -- edit or refactor requests still waiting for their response
M.last_review = nil -- the last review: {hunks = n, taken = {indices}, applied = bool}
M.ops = {} -- the live view's ops of the running edit (copyedit/op notifications), in order

local root_clients = {} -- root_dir -> client id (0.7: no vim.lsp.start to reuse clients)

local function notify(message, level)
  vim.notify('copyedit: ' .. message, level or vim.log.levels.INFO)
end

local function fire(pattern)
  -- `User` autocmds with no handler print "No matching autocommands" unless <nomodeline> + silent
  vim.cmd('silent doautocmd <nomodeline> User ' .. pattern)
end

-- The version of a buffer as the LSP client last sent it (0.7: util.buf_versions; later: changedtick).
function M.buf_version(bufnr)
  local versions = vim.lsp.util.buf_versions
  local version = versions and versions[bufnr]
  if version == nil then
    version = vim.api.nvim_buf_get_changedtick(bufnr)
  end
  return version
end

-- 0.11 made client functions methods (client:request); 0.7-0.10 call them as fields.
local METHODS = vim.fn.has('nvim-0.11') == 1

local function request(client, method, params, handler, bufnr)
  if METHODS then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function is_stopped(client)
  if METHODS then
    return client:is_stopped()
  end
  return client.is_stopped()
end

local function is_copyedit(client)
  return client and client.name == M.name
end

-- The copyedit clients attached to a buffer (0.7 has buf_get_clients; 0.10+ get_clients).
function M.clients(bufnr)
  local found = {}
  if vim.lsp.get_clients then
    for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = M.name })) do
      table.insert(found, client)
    end
  else
    local clients = bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()
    for _, client in pairs(clients) do
      if is_copyedit(client) then
        table.insert(found, client)
      end
    end
  end
  return found
end

local function root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = name ~= '' and vim.fn.fnamemodify(name, ':p:h') or vim.loop.cwd()
  local current = dir
  while current and current ~= '' do
    for _, marker in ipairs(M.config.root_markers or {}) do
      if vim.loop.fs_stat(current .. '/' .. marker) then
        return current
      end
    end
    local parent = vim.fn.fnamemodify(current, ':h')
    if parent == current then
      break
    end
    current = parent
  end
  return dir
end

-- $/progress: chain to the default handler (client.messages.progress, User LspProgressUpdate),
-- then show the message and remember it (User CopyEditProgress).
local function progress_handler(err, result, ctx, config)
  local default = vim.lsp.handlers['$/progress']
  local returned
  if default then
    -- (0.7's default handler raises on a report whose begin it missed: keep showing ours)
    local ok, value = pcall(default, err, result, ctx, config)
    returned = ok and value or nil
  end
  local value = result and result.value
  if type(value) == 'table' and value.kind then
    local state = M._progress_titles or {}
    M._progress_titles = state
    if value.kind == 'begin' then
      state[result.token] = value.title
    end
    local title = state[result.token] or 'copyedit'
    if value.kind == 'end' then
      state[result.token] = nil
    end
    M.last_progress = {
      token = result.token,
      kind = value.kind,
      title = title,
      message = value.message,
      percentage = value.percentage,
    }
    local text = title .. (value.message and (': ' .. value.message) or '')
    if value.percentage and value.kind ~= 'end' then
      text = text .. string.format(' (%d%%)', value.percentage)
    end
    if M.config.progress == 'notify' then
      vim.notify(text, vim.log.levels.INFO)
    elseif M.config.progress == 'echo' then
      vim.api.nvim_echo({ { text, 'ModeMsg' } }, false, {})
    end
    fire('CopyEditProgress')
  end
  return returned
end


-- Review before apply -------------------------------------------------------------------------
-- The server marks the hunks of an edit it wants confirmed with change annotations that need
-- confirmation (its `review` setting). The handler of workspace/applyEdit then shows each hunk in
-- a floating window over the highlighted lines it replaces and asks, as :s///c does:
--   y  take this hunk       n  leave it
--   a  take it and every hunk after it    q / <Esc>  leave it and every hunk after it
-- and answers the server with what it did: {applied, hunks = the 1-based indices taken}.

local review_ns = vim.api.nvim_create_namespace('copyedit-review')
vim.api.nvim_set_hl(0, 'CopyEditReviewOld', { default = true, link = 'DiffDelete' })
vim.api.nvim_set_hl(0, 'CopyEditReviewNew', { default = true, link = 'DiffAdd' })

local function needs_review(edit)
  for _, annotation in pairs(edit.changeAnnotations or {}) do
    if annotation.needsConfirmation then
      return true
    end
  end
  return false
end

-- Every text edit of a WorkspaceEdit in order, with the document it changes.
local function hunks_of(edit)
  local hunks = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      for _, text_edit in ipairs(change.edits) do
        table.insert(hunks, { document = change.textDocument, edit = text_edit })
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
  table.insert(body, 1, title)
  table.insert(body, 'y take  n leave  a take this and the rest  q leave this and the rest')
  local float = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(float, 0, -1, false, body)
  for row = 1, #old do
    vim.api.nvim_buf_add_highlight(float, review_ns, 'CopyEditReviewOld', row, 0, -1)
  end
  for row = #old + 1, #old + #added do
    vim.api.nvim_buf_add_highlight(float, review_ns, 'CopyEditReviewNew', row, 0, -1)
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
function M.review_key()
  local ok, key = pcall(vim.fn.getchar)
  if not ok then
    return 'q' -- <C-c>: leave the rest
  end
  return type(key) == 'number' and vim.fn.nr2char(key) or key
end

--- Ask about each hunk of `edit`; return the 1-based indices taken.
function M.review(edit, label)
  local hunks = hunks_of(edit)
  local taken, all = {}, false
  for index = 1, #hunks do
    if all then
      table.insert(taken, index)
    else
      local close = show_hunk(hunks, index, label)
      local key
      repeat
        key = M.review_key()
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
local function apply_edit_handler(err, params, ctx, config)
  local default = vim.lsp.handlers['workspace/applyEdit']
  if not (params and params.edit and needs_review(params.edit)) then
    return default(err, params, ctx, config)
  end
  local label = params.label and params.label:gsub('^copyedit: ', '') or nil
  local taken, hunks = M.review(params.edit, label)
  M.last_review = { hunks = #hunks, taken = taken, applied = #taken > 0, edit = params.edit }
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

-- The live view ---------------------------------------------------------------------------------
-- copyedit/op: the server's notification as each op of a running edit closes. Copied lines are
-- dimmed, a gen is marked where its lines go; the status line shows ops and tokens/s.

local live_ns = vim.api.nvim_create_namespace('copyedit-live')
vim.api.nvim_set_hl(0, 'CopyEditCopied', { default = true, link = 'Comment' })
vim.api.nvim_set_hl(0, 'CopyEditGenerated', { default = true, link = 'DiffAdd' })

local function op_handler(_, params)
  if type(params) ~= 'table' then
    return
  end
  if params.index == 0 then
    M.ops = {}
  end
  if params.op then
    table.insert(M.ops, params)
  end
  local bufnr = vim.uri_to_bufnr(params.uri)
  if M.config.live and vim.api.nvim_buf_is_loaded(bufnr) then
    if params.done then
      vim.api.nvim_buf_clear_namespace(bufnr, live_ns, 0, -1)
    elseif params.op and params.op.kind == 'copy' then
      for row = params.op.start, params.op['end'] - 1 do
        pcall(vim.api.nvim_buf_add_highlight, bufnr, live_ns, 'CopyEditCopied', row, 0, -1)
      end
    elseif params.op and params.op.kind == 'gen' then
      local count = vim.api.nvim_buf_line_count(bufnr)
      local row = math.min(params.op.line, count - 1)
      local text = string.format('  + %d line(s) written', params.op.lines)
      pcall(vim.api.nvim_buf_set_extmark, bufnr, live_ns, row, 0, { virt_text = { { text, 'CopyEditGenerated' } } })
    end
  end
  fire('CopyEditOp')
end

-- The client's capabilities: Neovim's, with change annotations (the review reads them).
local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.workspace = caps.workspace or {}
  caps.workspace.workspaceEdit = caps.workspace.workspaceEdit or {}
  caps.workspace.workspaceEdit.changeAnnotationSupport = { groupsOnLabel = false }
  return caps
end

local function client_config(bufnr)
  local root = root_dir(bufnr)
  return {
    name = M.name,
    cmd = M.config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = M.config.init_options,
    handlers = {
      ['$/progress'] = progress_handler,
      ['workspace/applyEdit'] = apply_edit_handler,
      ['copyedit/op'] = op_handler,
    },
    capabilities = capabilities(),
    flags = M.config.flags,
    on_attach = M.config.on_attach,
  }
end

-- Start (or reuse) the client for this buffer's root and attach the buffer.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local config = client_config(bufnr)
  if vim.lsp.start then
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  local id = root_clients[config.root_dir]
  if id == nil or vim.lsp.client_is_stopped(id) then
    id = vim.lsp.start_client(config)
    if not id then
      notify('could not start ' .. table.concat(M.config.cmd, ' '), vim.log.levels.ERROR)
      return nil
    end
    root_clients[config.root_dir] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

-- Run fn(client) once the buffer's copyedit client has initialized (bounded: 60 s).
local function with_client(bufnr, fn)
  local client = M.clients(bufnr)[1]
  if not client then
    notify('no copyedit server is attached to this buffer (filetype ' .. vim.bo[bufnr].filetype .. ')', vim.log.levels.ERROR)
    return
  end
  if client.initialized then
    return fn(client)
  end
  local waited = 0
  local function retry()
    if client.initialized then
      return fn(client)
    elseif is_stopped(client) or waited > 60000 then
      notify('the server did not start', vim.log.levels.ERROR)
    else
      waited = waited + 100
      vim.defer_fn(retry, 100)
    end
  end
  notify('waiting for the server to start')
  vim.defer_fn(retry, 100)
end

-- Why program mode's program gave way to a rewrite (the server's stats.fallback, edit.FALLBACKS).
local FALLBACK_WORDS = { cut = 'cut short', syntax = 'broke the syntax', loss = 'lost code', unchanged = 'changed nothing' }

local function describe(result)
  if type(result) ~= 'table' then
    return vim.inspect(result)
  end
  local parts = {}
  if result.applied then
    table.insert(parts, result.edits and string.format('applied %d edit(s)', result.edits) or 'applied')
  else
    table.insert(parts, 'not applied' .. (result.reason and (': ' .. result.reason) or ''))
  end
  local s = result.stats
  if type(s) == 'table' then
    table.insert(
      parts,
      string.format(
        '%s ops, %s / %s generated tokens, %.1f s',
        s.ops or '?',
        -- a remote server's copies are prefix-cache hits it does not count: its requests instead
        (tonumber(s.requests) or 0) > 0 and (s.requests .. ' requests') or ((s.splicedTokens or '?') .. ' copied'),
        s.generatedTokens or '?',
        tonumber(s.seconds) or 0
      )
    )
    if type(s.fallback) == 'string' then -- program mode's program gave way to a rewrite by the base model
      table.insert(parts, 'rewritten (program ' .. (FALLBACK_WORDS[s.fallback] or s.fallback) .. ')')
    end
  end
  return table.concat(parts, '; ')
end
M.describe = describe

-- Send workspace/executeCommand; record and report the response; then call on_done(err, result).
function M.execute(client, bufnr, command, argument, on_done)
  M.pending = M.pending + 1
  M.last_result, M.last_error = nil, nil
  local params = { command = command, arguments = { argument } }
  local ok = request(client, 'workspace/executeCommand', params, function(err, result)
    M.pending = M.pending - 1
    M.last_error = err
    M.last_result = result
    if err then
      notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
    elseif command == M.EDIT then
      local level = (result and result.applied) and vim.log.levels.INFO or vim.log.levels.WARN
      notify(describe(result), level)
    elseif command == M.REFACTOR and type(result) == 'table' then
      notify(
        string.format('%d of %d files changed%s', result.changed or 0, result.files or 0, result.applied and '' or ' (nothing applied)'),
        vim.log.levels.INFO
      )
    end
    if on_done then
      on_done(err, result)
    end
    fire('CopyEditDone')
  end, bufnr)
  if not ok then
    M.pending = M.pending - 1
    notify('the server has shut down', vim.log.levels.ERROR)
  end
  return ok
end

-- Ask for an instruction (vim.ui.input) unless one is given; fn(instruction) when there is one.
local function with_instruction(instruction, fn)
  if instruction and vim.trim(instruction) ~= '' then
    return fn(instruction)
  end
  vim.ui.input({ prompt = 'copyedit instruction: ' }, function(input)
    if input and vim.trim(input) ~= '' then
      fn(input)
    end
  end)
end

local function character(client, line, col)
  if client.offset_encoding == 'utf-8' or col == 0 then
    return col
  end
  local ok, utf32, utf16 = pcall(vim.str_utfindex, line, col)
  if not ok then
    return col
  end
  return client.offset_encoding == 'utf-32' and utf32 or utf16
end

--- Edit with the model.
--- opts: bufnr, instruction (prompted when absent), line1/line2 (1-based, inclusive: edit those
--- lines; absent: the scope under the cursor), on_done(err, result).
function M.edit(opts)
  opts = opts or {}
  local bufnr = (opts.bufnr == nil or opts.bufnr == 0) and vim.api.nvim_get_current_buf() or opts.bufnr
  local range
  if opts.line1 then
    -- whole lines: the range ends at the start of the line after the selection
    range = { start = { line = opts.line1 - 1, character = 0 }, ['end'] = { line = opts.line2, character = 0 } }
  end
  local cursor = vim.api.nvim_win_get_cursor(0)
  with_client(bufnr, function(client)
    if not range then
      local row, col = cursor[1] - 1, cursor[2]
      local text = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
      local position = { line = row, character = character(client, text, col) }
      range = { start = position, ['end'] = position }
    end
    with_instruction(opts.instruction, function(instruction)
      M.execute(client, bufnr, M.EDIT, {
        uri = vim.uri_from_bufnr(bufnr),
        version = M.buf_version(bufnr),
        range = range,
        instruction = instruction,
      }, opts.on_done)
    end)
  end)
end

--- Refactor the workspace: opts.instruction (prompted when absent), opts.include, opts.on_done.
function M.refactor_workspace(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  with_client(bufnr, function(client)
    with_instruction(opts.instruction, function(instruction)
      M.execute(client, bufnr, M.REFACTOR, { instruction = instruction, include = opts.include }, opts.on_done)
    end)
  end)
end

--- Stop every queued or running edit of every copyedit server.
function M.cancel(on_done)
  local clients = M.clients(nil)
  if #clients == 0 then
    notify('no copyedit server is running', vim.log.levels.WARN)
    return
  end
  for _, client in ipairs(clients) do
    request(client, 'workspace/executeCommand', { command = M.CANCEL, arguments = {} }, function(err, result)
      if err then
        notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
      else
        M.last_cancel = result
        notify(string.format('cancelled %d edit(s)', result and result.cancelled or 0))
      end
      if on_done then
        on_done(err, result)
      end
    end)
  end
end

-- A copyedit.edit code action chosen through vim.lsp.buf.code_action(): Neovim 0.7+ calls
-- vim.lsp.commands[command](command, ctx) with the Command {title, command, arguments} and
-- ctx {bufnr, method, params, client_id}. Prompt for a missing instruction, then forward.
function M.code_action_command(command, ctx)
  local argument = vim.deepcopy((command.arguments or {})[1] or {})
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client then
    notify('the server has shut down', vim.log.levels.ERROR)
    return
  end
  with_instruction(argument.instruction, function(instruction)
    argument.instruction = instruction
    M.execute(client, ctx.bufnr, command.command, argument)
  end)
end

function M.create_commands()
  vim.api.nvim_create_user_command('CopyEdit', function(args)
    M.edit({
      instruction = args.args,
      line1 = args.range > 0 and args.line1 or nil,
      line2 = args.range > 0 and args.line2 or nil,
    })
  end, { nargs = '*', range = true, desc = 'copyedit: edit the selection or the scope under the cursor' })
  vim.api.nvim_create_user_command('CopyEditWorkspace', function(args)
    M.refactor_workspace({ instruction = args.args })
  end, { nargs = '*', desc = 'copyedit: refactor the workspace' })
  vim.api.nvim_create_user_command('CopyEditCancel', function()
    M.cancel()
  end, { nargs = 0, desc = 'copyedit: cancel running edits' })
end

--- setup{cmd, init_options, filetypes, root_markers, progress, flags, on_attach}
function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  for key, value in pairs(opts or {}) do
    if type(value) == 'table' and (vim.islist or vim.tbl_islist)(value) then
      M.config[key] = value -- lists (cmd, filetypes, root_markers) are replaced, not merged
    end
  end
  vim.lsp.commands[M.EDIT] = M.code_action_command
  M.create_commands()
  local group = vim.api.nvim_create_augroup('copyedit', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  -- buffers already open when setup runs
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(M.config.filetypes, vim.bo[bufnr].filetype) then
      M.attach(bufnr)
    end
  end
end

return M
