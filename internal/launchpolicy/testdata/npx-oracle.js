// npx-oracle.js answers, for a batch of `npx` argument vectors, whether the
// pinned npm (testdata/npm) would run a string as code before it reaches the
// package. It is run by oracle_test.go:
//
//	node npx-oracle.js < {"npmDir": "...", "watched": [...], "vectors": [{"args": [...], "env": {...}}]}
//
// and prints one JSON result per vector. Every parsing step is npm's own
// code, run in this process:
//
//  1. bin/npx-cli.js, the real script, with lib/cli.js replaced by a stub
//     that records the command line it would hand to npm;
//  2. @npmcli/config's Config.load() on that command line, as lib/npm.js
//     builds it (its nopt parse, validation and clean-up, environment and
//     setEnvs), with an empty HOME and working folder so that no npmrc of
//     this machine takes part;
//  3. the decisions lib/npm.js, lib/commands/exec.js and libnpmexec take
//     next, mirrored below with the source they come from.
//
// What counts as "runs a string as code" (libnpmexec 9, lib/run-script.js:
// `script = call || args.shift() || scriptShell`, run by @npmcli/run-script
// as `<script-shell> -c "<script> <escaped args>"`):
//
//   - call: a non-empty call config with no positional argument
//     (exec.js throws a usage error when both are given);
//   - scriptShell: a script-shell config: the program that interprets the
//     command line is the caller's choice;
//   - nodeOptions: NODE_OPTIONS exported by setEnvs from the node-options
//     config, which node then applies to the package's process
//     (--require, --import);
//   - shellCommand: a package config (so no bin lookup replaces args[0])
//     and a first positional argument that is not one plain word: it
//     reaches `sh -c` unescaped;
//   - shell: no call and no (or an empty) first positional argument: the
//     script is the script shell itself, run on the child's stdin (libnpmexec's
//     interactive mode, non-interactive when stdin is not a terminal).
//
// Config files take part like the command line: a userconfig, globalconfig,
// prefix or HOME the vector names is read by Config.load() (the working
// folder and HOME stay empty otherwise), so a `call` or `node-options` line
// in such a file shows up as code. cli and env report, for the keys in
// "watched" (normalised as npm's loadEnv does), what the command line and
// the environment set.
//
// Apart from code, runsFile says whether exec would run or install a file
// path given where a package belongs (see below).
//
// All of them only if exec is reached: not with --versions (runs `npm
// version`), --version (prints and exits) or usage (-h, --help, --usage).
'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const Module = require('node:module')

const main = async () => {
  const input = JSON.parse(fs.readFileSync(0, 'utf8'))
  const npmDir = path.resolve(input.npmDir)
  const binDir = path.join(npmDir, 'bin')
  const fromBin = (id) => require(require.resolve(id, { paths: [binDir] }))
  const Config = fromBin('@npmcli/config')
  const { definitions, flatten, shorthands } = fromBin('@npmcli/config/lib/definitions')
  const npa = fromBin('npm-package-arg')
  const configDir = path.dirname(require.resolve('@npmcli/config/package.json', { paths: [binDir] }))
  const nopt = require(require.resolve('nopt', { paths: [configDir] }))
  const noptLib = require(path.join(path.dirname(require.resolve('nopt/package.json', { paths: [configDir] })), 'lib', 'nopt-lib.js'))

  const npxPath = path.join(binDir, 'npx-cli.js')
  const cliPath = require.resolve(path.join(npmDir, 'lib', 'cli.js'))
  let captured = null
  const stub = new Module(cliPath)
  stub.filename = cliPath
  stub.loaded = true
  stub.exports = (proc) => {
    captured = proc.argv.slice()
  }
  require.cache[cliPath] = stub

  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'npx-oracle-'))
  const home = path.join(root, 'home')
  const cwd = path.join(root, 'cwd')
  fs.mkdirSync(home)
  fs.mkdirSync(cwd)

  const shellWord = (s) => /^[A-Za-z0-9@%+:,./_-]*$/.test(s)
  const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k)
  const watched = new Set(input.watched)
  const npmKey = (k) => k.startsWith('//') ? k : k.replace(/(?!^)_/g, '-').toLowerCase()

  // Stage 1 is synchronous and uses the global process.argv, so it runs
  // vector by vector; stage 2 only reads its own Config and env, so those
  // loads overlap (their file reads would otherwise dominate).
  const runNpxCli = (vec) => {
    const r = { crash: null, stderr: [], argv: null, cli: {}, env: {}, parsed: [], remain: null }
    captured = null
    const savedArgv = process.argv
    const savedError = console.error
    process.argv = [process.execPath, npxPath, ...vec.args]
    console.error = (...a) => r.stderr.push(a.join(' '))
    try {
      delete require.cache[npxPath]
      require(npxPath)
    } catch (e) {
      r.crash = `npx-cli.js: ${e && e.message}`
    } finally {
      process.argv = savedArgv
      console.error = savedError
    }
    if (!r.crash && !captured) {
      r.crash = 'npx-cli.js did not call lib/cli.js'
    }
    return { r, argv: captured }
  }

  const loadAndDecide = async (vec, r, argv) => {
    if (r.crash) {
      return finish(r)
    }
    r.argv = argv.slice(2)
    // 2. Config.load(), as lib/npm.js constructs it
    const env = { HOME: home, ...(vec.env || {}) }
    const hadNodeOptions = own(env, 'NODE_OPTIONS')
    let config
    try {
      config = new Config({
        npmPath: npmDir,
        definitions,
        flatten,
        shorthands,
        argv,
        env,
        cwd,
        execPath: process.execPath,
        platform: process.platform,
        excludeNpmCwd: false,
      })
      await config.load()
    } catch (e) {
      r.crash = `config.load: ${e && e.message}`
      return finish(r)
    }
    const cliData = config.data.get('cli').data
    const envData = config.data.get('env').data
    for (const [data, out] of [[cliData, r.cli], [envData, r.env]]) {
      for (const k of Object.keys(data)) {
        if (watched.has(npmKey(k))) {
          out[npmKey(k)] = data[k]
        }
      }
    }
    r.remain = [...config.parsedArgv.remain]
    // parsed: the watched keys nopt's parse() sets, before clean() drops
    // the values its types refuse (and before Config files a --globalconfig
    // under its defaults): what the Go replay models.
    const raw = {}
    try {
      noptLib.parse(argv.slice(2), raw, [], { types: config.types, shorthands, typeDefs: nopt.typeDefs })
    } catch {}
    for (const k of Object.keys(raw)) {
      if (watched.has(npmKey(k))) {
        r.parsed.push(npmKey(k))
      }
    }

    // 3. lib/npm.js #load and #exec, lib/commands/exec.js, libnpmexec
    const versions = !!config.get('versions', 'cli') // argv becomes ['version']
    const command = versions ? 'version' : r.remain[0]
    const args = versions ? [] : r.remain.slice(1)
    const version = !!config.get('version', 'cli') // prints, { exec: false }
    const usage = !!config.get('usage') // prints command.usage
    r.execReached = command === 'exec' && !version && !usage
    const call = config.get('call')
    const scriptShell = config.get('script-shell') || undefined
    const packages = config.get('package') || []
    r.usageError = !!(call && args.length)
    const nodeOptions = !hadNodeOptions && own(env, 'NODE_OPTIONS') && !!env.NODE_OPTIONS
    const go = r.execReached && !r.usageError
    r.runs = {
      call: go && !!call,
      scriptShell: go && !!scriptShell,
      nodeOptions: go && nodeOptions,
      shellCommand: go && !call && packages.length > 0 && args.length > 0 && !shellWord(args[0]),
      shell: go && !call && !args[0],
    }
    // runsFile: exec would run or install a file path given as a package
    // (libnpmexec 9, lib/index.js): a --package value npm-package-arg reads
    // as a file or folder, or, without --package, a first argument that
    // path.resolve takes out of the node_modules/.bin folder it is looked up
    // in (localFileExists) or that npm-package-arg reads as a file or folder.
    // (With --package the first argument is a shell command, not a package.)
    const localBin = path.join(cwd, 'node_modules', '.bin')
    const npaPath = (p) => {
      try {
        const type = npa(p, cwd).type
        return type === 'file' || type === 'directory'
      } catch {
        return false
      }
    }
    const escapes = (p) => {
      const rel = path.relative(localBin, path.resolve(localBin, p))
      return rel.split(path.sep)[0] === '..' || path.isAbsolute(rel)
    }
    r.runsFile = go && (packages.some(npaPath) ||
      (packages.length === 0 && args.length > 0 && (escapes(args[0]) || npaPath(args[0]))))
    return finish(r)
  }

  const results = new Array(input.vectors.length)
  const batch = 64
  try {
    for (let i = 0; i < input.vectors.length; i += batch) {
      const slice = input.vectors.slice(i, i + batch)
      const staged = slice.map(runNpxCli)
      const done = await Promise.all(slice.map((vec, j) => loadAndDecide(vec, staged[j].r, staged[j].argv)))
      done.forEach((r, j) => { results[i + j] = r })
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  process.stdout.write(JSON.stringify(results) + '\n')
}

const finish = (r) => {
  r.runs = r.runs || { call: false, scriptShell: false, nodeOptions: false, shellCommand: false, shell: false }
  r.execReached = !!r.execReached
  r.usageError = !!r.usageError
  r.runsFile = !!r.runsFile
  r.code = Object.values(r.runs).some(Boolean)
  return r
}

main().catch((e) => {
  process.stderr.write(`npx-oracle.js: ${e && e.stack}\n`)
  process.exit(1)
})
