-- copyedit-lsp for Neovim: starts the server, asks for instructions, shows progress and results.
--
-- Works on Neovim 0.7.2 (Debian bookworm) and later: on 0.7 the client is started with
-- vim.lsp.start_client and attached with vim.lsp.buf_attach_client from a FileType autocmd;
-- where vim.lsp.start exists (0.8+) it is used instead.

local connection = require('copyedit.client')
local review = require('copyedit.review')
local util = require('copyedit.util')
local notify, fire, request = util.notify, util.fire, util.request

local M = {}

M.name = 'copyedit'
M.EDIT = 'copyedit.edit'
M.APPLY = 'copyedit.apply'
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

M.clients = connection.clients -- the copyedit clients attached to a buffer (nil: every buffer)
M.attach = connection.attach -- start (or reuse) the client for a buffer's root and attach it
M.review = review.review -- ask about each hunk of an edit; the 1-based indices taken
M.review_key = review.key -- the review's next key (getchar; tests feed typeahead)
local with_client = connection.with_client

-- The version of a buffer as the LSP client last sent it (0.7: util.buf_versions; later: changedtick).
function M.buf_version(bufnr)
  local versions = vim.lsp.util.buf_versions
  local version = versions and versions[bufnr]
  if version == nil then
    version = vim.api.nvim_buf_get_changedtick(bufnr)
  end
  return version
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
    elseif command == M.EDIT or command == M.APPLY then
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

--- Merge a change an assistant wrote (a lazy snippet, search/replace blocks, a diff, a whole file)
--- into a buffer. opts: bufnr (default: the current one), change (the text), on_done(err, result).
function M.apply(opts)
  opts = opts or {}
  local bufnr = (opts.bufnr == nil or opts.bufnr == 0) and vim.api.nvim_get_current_buf() or opts.bufnr
  if type(opts.change) ~= 'string' or vim.trim(opts.change) == '' then
    notify('no change to apply (the register or the lines are empty)', vim.log.levels.WARN)
    return
  end
  with_client(bufnr, function(client)
    M.execute(client, bufnr, M.APPLY, {
      uri = vim.uri_from_bufnr(bufnr),
      version = M.buf_version(bufnr),
      change = opts.change,
    }, opts.on_done)
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
  vim.api.nvim_create_user_command('CopyEditApply', function(args)
    local register = args.args ~= '' and args.args or '+'
    M.apply({ change = vim.fn.getreg(register) })
  end, { nargs = '?', desc = 'copyedit: merge the change in a register (default +) into this buffer' })
  vim.api.nvim_create_user_command('CopyEditApplyTo', function(args)
    -- a number is the buffer's number (bufnr('1') would match names that hold a 1), else its name
    local number = tonumber(args.args)
    local target = number or vim.fn.bufnr(args.args)
    if not (target > 0 and vim.api.nvim_buf_is_valid(target)) then
      notify('no buffer ' .. args.args, vim.log.levels.ERROR)
      return
    end
    local lines = vim.api.nvim_buf_get_lines(0, args.line1 - 1, args.line2, false)
    M.apply({ bufnr = target, change = table.concat(lines, '\n') .. '\n' })
  end, {
    nargs = 1,
    range = '%',
    complete = 'buffer',
    desc = 'copyedit: merge these lines (default: all) as a change into another buffer',
  })
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
