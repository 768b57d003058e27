// Package handover holds what a run hands over to the person besides its
// text: the images and files its agent names by marker lines
// (agent.Handover) or drops in the workspace's DropDir for its task
// (TaskID), confined to the workspace, compressed and stored in the media
// object store with an image event each (Store.Collect); the agent's
// descriptions of them as captions (Descriptions); the diff of changes
// waiting for approval drawn as an image (Endpoint.DiffImage); and the
// screenshot endpoint agents call through `textslash shot` (Endpoint,
// Shoot), with Chromium in pageshot.
//
// It knows nothing of the runner that uses it: the run's job, workspace
// and logger come as arguments, so the runner may import this package
// and never the other way.
package handover
