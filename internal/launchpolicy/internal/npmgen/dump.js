// dump.js prints, as JSON, the option tables that npm's own code uses when
// npx parses its command line. It is run by npmgen (see npmgen.go) with the
// npm package directory as its only argument:
//
//	node dump.js <dir of the npm package>
//
// Nothing here is typed by hand: every table is read from the running code of
// that npm, the way npx itself reads it.
//
//   - configs, shorthands: @npmcli/config/lib/definitions, as resolved from
//     npm's bin/ folder (bin/npx-cli.js requires exactly this module).
//   - abbrevs, shortAbbrevs: the `abbrev` module that nopt requires, applied
//     to the config names and to the shorthand names, as nopt's parse() does.
//   - sources: whether npm's code still reads the names npmgen tags by hand
//     (see npmgen.go), given as {module, needle} pairs in argv[3].
//   - npx: the Sets that bin/npx-cli.js builds when it starts. They are local
//     constants of that script, so the script is run once with an empty
//     command line and a recording Set in place of the global one; lib/cli.js
//     is replaced by a stub so that nothing else runs.
'use strict'

const path = require('node:path')
const Module = require('node:module')

const npmDir = path.resolve(process.argv[2] || '')
const fail = (msg) => {
  process.stderr.write(`dump.js: ${msg}\n`)
  process.exit(1)
}

const pkg = require(path.join(npmDir, 'package.json'))
if (pkg.name !== 'npm') {
  fail(`${npmDir} is not the npm package (name ${JSON.stringify(pkg.name)})`)
}
const binDir = path.join(npmDir, 'bin')
const fromBin = (id) => require(require.resolve(id, { paths: [binDir] }))
const { definitions, shorthands } = fromBin('@npmcli/config/lib/definitions')
const typeDefs = fromBin('@npmcli/config/lib/type-defs')
const noptDir = path.dirname(require.resolve('nopt/package.json', { paths: [binDir] }))
const abbrev = require(require.resolve('abbrev', { paths: [noptDir] }))
const noptVersion = require(path.join(noptDir, 'package.json')).version

// configs: what nopt's parse() looks at in a config's type.
const describe = (name, type) => {
  let t = type
  // nopt's getType: a one-element type array is that element
  if (Array.isArray(t) && t.length === 1) {
    t = t[0]
  }
  const arr = Array.isArray(t)
  const out = {
    name,
    typeArray: arr,
    boolean: t === Boolean || (arr && t.includes(Boolean)),
    stringOnly: t === String,
    hasString: arr && t.includes(String),
    hasNumber: arr && t.includes(Number),
    nullOnly: t === null,
    hasNull: arr && t.includes(null),
    literals: arr ? t.filter((x) => typeof x === 'string') : [],
    // path: the value names a file or folder (nopt's path type).
    path: t === typeDefs.path.type || (arr && t.includes(typeDefs.path.type)),
  }
  return out
}
const configs = Object.entries(definitions)
  .map(([name, def]) => describe(name, def.type))
  .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

const shorthandTable = {}
for (const [k, v] of Object.entries(shorthands)) {
  shorthandTable[k] = Array.isArray(v) ? [...v] : String(v).split(/\s+/)
}

const plain = (o) => Object.fromEntries(Object.entries(o))
const abbrevs = plain(abbrev(Object.keys(definitions)))
const shortAbbrevs = plain(abbrev(Object.keys(shorthands)))

// npx: run bin/npx-cli.js with a recording Set and a stub lib/cli.js.
const npxPath = path.join(binDir, 'npx-cli.js')
const cliPath = require.resolve(path.join(npmDir, 'lib', 'cli.js'))
const stub = new Module(cliPath)
stub.filename = cliPath
stub.loaded = true
stub.exports = () => {}
require.cache[cliPath] = stub

const RealSet = global.Set
const made = []
global.Set = class RecordingSet extends RealSet {
  constructor (...a) {
    super(...a)
    made.push(this)
  }
}
const argv = process.argv
process.argv = [process.execPath, npxPath]
try {
  require(npxPath)
} finally {
  global.Set = RealSet
  process.argv = argv
}
// npx-cli.js builds, in order: removedSwitches, removedOpts, removed,
// switches, opts.
if (made.length !== 5) {
  fail(`bin/npx-cli.js built ${made.length} Sets, expected 5; its structure changed, review npx.go`)
}
const [removedSwitches, removedOpts, removed, switches, opts] = made.map((s) => [...s].sort())
const union = [...new RealSet([...removedSwitches, ...removedOpts])].sort()
if (JSON.stringify(union) !== JSON.stringify(removed)) {
  fail('bin/npx-cli.js: the third Set is not removedSwitches ∪ removedOpts; review npx.go')
}
for (const k of removedSwitches) {
  if (!switches.includes(k)) {
    fail(`bin/npx-cli.js: removed switch ${k} is not a switch; review npx.go`)
  }
}
for (const k of removedOpts) {
  if (!opts.includes(k)) {
    fail(`bin/npx-cli.js: removed option ${k} is not a value option; review npx.go`)
  }
}
// The rewrites that npx-cli.js applies by name are code, not tables; npx.go
// mirrors them. Refuse to generate if they changed.
const src = require('node:fs').readFileSync(npxPath, 'utf8')
for (const needle of [
  "case 'p':\n        process.argv[i] = ['--package', ...v].join('=')",
  "case 'shell':\n        process.argv[i] = ['--script-shell', ...v].join('=')",
  "case 'no-install':\n        process.argv[i] = '--yes=false'",
  "const [key, ...v] = arg.replace(/^-+/, '').split('=')",
  "process.argv.splice(i, 0, '--')",
]) {
  if (!src.includes(needle)) {
    fail(`bin/npx-cli.js no longer contains ${JSON.stringify(needle)}; review npx.go`)
  }
}

// sources: for each {module, needle} npmgen passes as JSON in argv[3] (the
// places a hand-tagged name is read by npm's code), whether the module, as
// resolved from npm's bin/ folder, still contains the needle.
const needles = JSON.parse(process.argv[3] || '[]')
const sources = needles.map(({ module: id, needle }) => {
  const file = require.resolve(id, { paths: [binDir] })
  return { module: id, needle, found: require('node:fs').readFileSync(file, 'utf8').includes(needle) }
})

process.stdout.write(JSON.stringify({
  npmVersion: pkg.version,
  noptVersion,
  configs,
  shorthands: shorthandTable,
  abbrevs,
  shortAbbrevs,
  npx: { removedSwitches, removedOpts, switches, opts },
  sources,
}, null, 1) + '\n')
