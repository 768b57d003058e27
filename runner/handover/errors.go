package handover

import "errors"

// errOutside: a screenshot path that is not a file inside the workspace.
var errOutside = errors.New("not a file inside the workspace")

// errTooLarge: a file larger than the runner takes.
var errTooLarge = errors.New("too large")

// errNotImage: a file handed over as an image that is no PNG or JPEG.
var errNotImage = errors.New("not a PNG or JPEG image")

// errNoBudget: the person's budget leaves nothing for a description.
var errNoBudget = errors.New("the budget is used up")
