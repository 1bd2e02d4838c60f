import { describeListSpecs } from '../operator/list-specs.js';
import { makeEtcdHarness } from './etcd-harness.js';

describeListSpecs('etcd (etcd3)', makeEtcdHarness(), 100);
