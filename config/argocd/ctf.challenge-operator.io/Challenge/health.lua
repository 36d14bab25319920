-- Argo CD health of a Challenge, from the status the operator writes:
-- Running is Healthy; None, Queued, Pending and Deleted are Progressing;
-- Error is Degraded. A status older than the spec is Progressing.
local health = {status = "Progressing", message = "Waiting for the operator"}
if obj.status == nil or obj.status.phase == nil or obj.status.phase == "" or obj.status.phase == "None" then
  return health
end
local status = obj.status
if obj.metadata.generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < obj.metadata.generation) then
  health.message = "Waiting for the operator to observe generation " .. obj.metadata.generation
  return health
end
local said = status.message or ""
if status.phase == "Running" then
  health.status = "Healthy"
  if status.endpoint ~= nil and status.endpoint.address ~= nil then
    health.message = "Running at " .. status.endpoint.address
  else
    health.message = "Running"
  end
elseif status.phase == "Error" then
  health.status = "Degraded"
  health.message = (status.reason or "Error") .. ": " .. said
elseif status.phase == "Queued" then
  if status.queuePosition ~= nil then
    health.message = "Queued at position " .. status.queuePosition
  else
    health.message = "Queued"
  end
elseif status.phase == "Deleted" then
  health.message = "Being torn down"
else
  health.message = status.phase .. ": " .. said
end
return health
