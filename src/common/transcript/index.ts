/**
 * The transcript: turn markers (`events`), the view model the panel renders (`model`), the reducer
 * that turns events into it (`reducer`, with its working context), and bounded output tails
 * (`outputTail`). Importers use this module's surface.
 */
export * from './events';
export * from './model';
export * from './outputTail';
export { applyEvent, buildTranscript } from './reducer';
export { jobCodeLine, jobsLeftRunning, runningJobs } from './jobEvents';
