export { instrumentLeasefence, type Instrumentation, type InstrumentationOptions } from './instrument.js';
export { ATTRIBUTE, METRIC, spanName } from './names.js';
