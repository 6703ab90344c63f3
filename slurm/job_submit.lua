-- schedlm's job_submit plugin (docs/slurm.md): fills what a submitted batch job
-- leaves out from what the cluster knows about jobs like it.
--
-- - no --time: the time limit is the job history's prediction (`schedlm history predict` on
--   the job's directory) times a margin, capped;
-- - no GPUs: the GPU count (and a batch size per GPU, for the job to read) from past runs of
--   the job's model (`schedlm advise fill`), when the runs file holds that model.
--
-- Every filled value goes into the job's comment (`scontrol show job`) and a line the
-- submitting user sees. `schedlm submit fill` reads the job script Slurm passes (written to a
-- private temporary file) and the job's directory only with the submitting user's rights
-- (`--uid`, `--gid`), within a budget (`budget_ms`, default 100 ms); past it, or when the
-- history is locked, the job is submitted unchanged with the cause. The plugin itself waits at
-- most `timeout` seconds (default 1) and then kills the filler and everything it started, so
-- slurmctld is never held longer. A job the filter cannot read is submitted unchanged, with a
-- warning. A user opts out with `--comment=schedlm=off`.
--
-- Installation: this file as job_submit.lua next to slurm.conf, `JobSubmitPlugins=lua` in
-- slurm.conf, and schedlm-submit.conf beside them (key = value lines: schedlm, db, runs,
-- margin, max_time, budget_ms, timeout, gpus_per_node); `scontrol reconfigure`. The plugin
-- reads only the two settings that start the filler (`schedlm`, `timeout`); the filler reads
-- the file itself (`--conf`, every value checked) and answers in `key<TAB>value` lines
-- (`--output lines`).

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"

local conf = here .. "schedlm-submit.conf"

-- The settings that start the filler: the executable and the seconds it is given.
local function launch()
  local s = { schedlm = "schedlm", timeout = "1" }
  local file = io.open(conf, "r")
  if file then
    for line in file:lines() do
      local key, value = line:match("^%s*([%w_]+)%s*=%s*(.-)%s*$")
      if key == "schedlm" or key == "timeout" then s[key] = value end
    end
    file:close()
  end
  return s
end

local function quote(text)
  return "'" .. tostring(text):gsub("'", "'\\''") .. "'"
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  if job_desc.script == nil or job_desc.work_dir == nil then
    return slurm.SUCCESS -- not a batch job
  end
  if job_desc.comment ~= nil and job_desc.comment:find("schedlm=off", 1, true) then
    return slurm.SUCCESS
  end
  local has_time = job_desc.time_limit ~= nil and job_desc.time_limit ~= slurm.NO_VAL
  local gres = (job_desc.tres_per_node or "") .. (job_desc.tres_per_job or "")
  local has_gpus = gres:find("gpu", 1, true) ~= nil
  if has_time and has_gpus then
    return slurm.SUCCESS
  end
  local s = launch()
  -- The script Slurm holds, for the filler to read (os.tmpname makes a private file).
  local script = os.tmpname()
  local file = io.open(script, "w")
  if file then
    file:write(job_desc.script:sub(1, 1048577))
    file:close()
  end
  local command = string.format(
    "timeout -s KILL %s %s submit fill --conf %s --output lines --script %s --dir %s --uid %d",
    quote(s.timeout), quote(s.schedlm), quote(conf), quote(script), quote(job_desc.work_dir),
    submit_uid)
  if job_desc.group_id ~= nil and job_desc.group_id ~= slurm.NO_VAL then
    command = command .. " --gid " .. string.format("%d", job_desc.group_id)
  end
  if has_time then command = command .. " --has-time" end
  if has_gpus then command = command .. " --has-gpus" end
  local pipe = io.popen(command .. " 2>&1")
  local out = pipe and pipe:read("*a") or ""
  local ok, how, code = false, nil, nil
  if pipe then ok, how, code = pipe:close() end
  os.remove(script)
  if how == "signal" or code == 124 or code == 137 then
    slurm.log_user("schedlm: submitted unchanged: timeout: the filter did not answer within %s s",
      s.timeout)
    return slurm.SUCCESS
  end
  -- The answer: `key<TAB>value` lines after `format<TAB>schedlm-fill-1` (`note` may repeat);
  -- other lines are the filler's messages on standard error. No format line, or a failed
  -- filler (where Lua reports its exit status), is a failure.
  local answer, notes = {}, {}
  for line in out:gmatch("[^\n]+") do
    local key, value = line:match("^([%w_]+)\t(.*)$")
    if key == "note" then
      notes[#notes + 1] = value
    elseif key then
      answer[key] = value
    end
  end
  if not ok or answer.format ~= "schedlm-fill-1" then
    slurm.log_user("schedlm: could not read the job (%s): submitted unchanged",
      (out:gsub("%s+$", "")):sub(1, 300))
    return slurm.SUCCESS
  end
  if answer.unchanged then
    slurm.log_user("schedlm: submitted unchanged: %s", answer.unchanged)
    return slurm.SUCCESS
  end
  local minutes = tonumber(answer.time_limit_min)
  local gpus = tonumber(answer.gpus)
  local comment = answer.comment or ""
  if minutes and not has_time then
    job_desc.time_limit = minutes
  end
  if gpus and not has_gpus then
    job_desc.tres_per_node = "gres:gpu:" .. gpus
  end
  if comment ~= "" then
    if job_desc.comment ~= nil and job_desc.comment ~= "" then
      comment = job_desc.comment .. "; " .. comment
    end
    job_desc.comment = comment
    slurm.log_user("%s", comment)
  end
  for _, note in ipairs(notes) do
    slurm.log_user("schedlm: not filled: %s", note)
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS
