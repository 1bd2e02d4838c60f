#!/usr/bin/env node
/**
 * The `leasefence` executable: runs the CLI on this process's arguments and streams, exits with its code.
 */
import { runCli } from './main.js';

const interrupted = new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  interrupted,
});
process.exitCode = code;
// NOTE: stdin may hold the event loop open (a terminal); the work is done.
process.stdin.unref?.();
