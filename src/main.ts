import { serveOrExit } from './serve.js';

serveOrExit();
