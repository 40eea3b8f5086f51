package sink

import "errors"

func asFatal(err error, f *interface{ Fatal() bool }) bool { return errors.As(err, f) }
