# filled by the workloads work
