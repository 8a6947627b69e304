import { startPanel } from '../shared/startPanel';
import { TableApp } from './tableApp';

startPanel('rolloutsTable', TableApp);
