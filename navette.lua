-- The project file of navette's own repository: what recipes/first-job.lua
-- and the other shipped recipes run under. Profiles name targets; `local`
-- is built in and needs nothing here.
return {
  name = "navette",
}
