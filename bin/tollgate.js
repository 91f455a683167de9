#!/usr/bin/env node
'use strict';
// The compiled CLI (npm install builds it). From a checkout without a build: npx tsx src/cli/index.ts
require('../dist/src/cli/index.js').main(process.argv);
