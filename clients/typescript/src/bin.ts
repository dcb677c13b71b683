#!/usr/bin/env node
// The package's `keel` command (see cli.ts).
import { main } from './cli.js';

await main();
