#!/usr/bin/env node
// node node_modules/claimd/bin.js MODULE[:EXPORT]: serve claimd's pipe: items with the module's
// export (handle unless named), its path taken from the current directory.
import { main } from './handler.js';

main();
