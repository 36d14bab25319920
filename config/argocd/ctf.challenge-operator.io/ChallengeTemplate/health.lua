-- Argo CD health of a ChallengeTemplate, from the conditions the operator
-- writes. A refusal (Accepted=False, Stalled=True) or a failure the operator
-- reports on the template (Degraded=True, SolverHealthy=False) is Degraded;
-- a status older than the spec, or Ready not True (a pool filling), is
-- Progressing; Accepted and Ready True for the current generation is Healthy.
local health = {status = "Progressing", message = "Waiting for the operator"}
if obj.status == nil or obj.status.conditions == nil then
  return health
end
local generation = obj.metadata.generation
local status = obj.status
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  health.message = "Waiting for the operator to observe generation " .. generation
  return health
end
local conditions = {}
for _, c in ipairs(status.conditions) do
  conditions[c.type] = c
end
local function is(type, value)
  return conditions[type] ~= nil and conditions[type].status == value
end
local function said(c)
  return (c.reason or c.type) .. ": " .. (c.message or "")
end
if is("Accepted", "False") then
  health.status = "Degraded"
  health.message = conditions.Accepted.message or "Not accepted"
  return health
end
for _, bad in ipairs({{"Stalled", "True"}, {"Degraded", "True"}, {"SolverHealthy", "False"}}) do
  if is(bad[1], bad[2]) then
    health.status = "Degraded"
    health.message = said(conditions[bad[1]])
    return health
  end
end
-- A condition written for an older generation says nothing of this spec.
local function current(c)
  return generation == nil or c.observedGeneration == nil or c.observedGeneration >= generation
end
local accepted, ready = conditions.Accepted, conditions.Ready
if accepted == nil or ready == nil then
  return health
end
if not current(accepted) or not current(ready) then
  health.message = "Waiting for the operator to observe generation " .. generation
elseif accepted.status ~= "True" then
  health.message = said(accepted)
elseif ready.status ~= "True" then
  health.message = said(ready)
else
  health.status = "Healthy"
  health.message = ready.message or "Ready"
end
return health
