-- Argo CD health of the edgeplatform.io kinds (AccessListConfig, PullZoneCertificate,
-- ContainerAppWatch), read from the status contract every kind follows:
--   Healthy      Ready is True for the object's current generation
--   Degraded     Stalled is True: waiting cannot help, a person must act
--   Suspended    Stalled because the object is paused or the app is suspended
--   Progressing  anything else: the operator has not caught up, or is retrying
local hs = { status = "Progressing", message = "Waiting for the operator" }
local generation = obj.metadata.generation
if obj.status == nil then
  return hs
end
if obj.status.observedGeneration == nil or obj.status.observedGeneration ~= generation then
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end
local found = {}
for _, condition in ipairs(obj.status.conditions or {}) do
  found[condition.type] = condition
end
local function describe(condition)
  if condition.message ~= nil and condition.message ~= "" then
    return condition.reason .. ": " .. condition.message
  end
  return condition.reason
end
local stalled = found["Stalled"]
if stalled ~= nil and stalled.status == "True" then
  if stalled.reason == "Paused" or stalled.reason == "Suspended" then
    hs.status = "Suspended"
  else
    hs.status = "Degraded"
  end
  hs.message = describe(stalled)
  return hs
end
local ready = found["Ready"]
if ready ~= nil and ready.status == "True"
    and (ready.observedGeneration == nil or ready.observedGeneration == generation) then
  hs.status = "Healthy"
  hs.message = describe(ready)
  return hs
end
local pending = found["Reconciling"] or ready
if pending ~= nil then
  hs.message = describe(pending)
end
return hs
