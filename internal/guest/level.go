package guest

import "strconv"

// levelNames are the log import's levels (abi/README.md): 0 debug, 1 info,
// 2 warn, 3 error.
var levelNames = [...]string{"debug", "info", "warn", "error"}

// LevelName names a log level; an unknown one is "level N".
func LevelName(level int32) string {
	if level >= 0 && int(level) < len(levelNames) {
		return levelNames[level]
	}
	return "level " + strconv.Itoa(int(level))
}
