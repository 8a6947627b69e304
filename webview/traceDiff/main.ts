import { startPanel } from '../shared/startPanel';
import { TraceDiffApp } from './traceDiffApp';

startPanel('traceDiff', TraceDiffApp);
