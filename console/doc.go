// Package console serves memstream's web console: a single-page app built
// with Vite from the sources in web/ and embedded here, so the binary needs
// no Node at run time. The page itself is public; every piece of data it
// shows comes from the JSON API with the bearer key the user typed in, so
// the console sees exactly what that key may see (banks and scopes).
package console
