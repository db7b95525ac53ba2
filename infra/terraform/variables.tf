variable "region" {
  description = "AWS region (null: AWS_REGION or the profile's region)."
  type        = string
  default     = null
}

variable "name" {
  description = "Name prefix of functions, queues, topic and log groups (the SAM stack name)."
  type        = string
  default     = "xjob"
}

variable "table_prefix" {
  description = "DynamoDB table name prefix: tables are <prefix>-jobs, <prefix>-logs, ... (XJOB_TABLE_PREFIX)."
  type        = string
  default     = "xjob"
}

variable "shards" {
  description = "Scan shard count (XJOB_SHARDS). Never change it after the first job exists."
  type        = number
  default     = 4
  validation {
    condition     = var.shards >= 1 && var.shards <= 4096
    error_message = "shards must be within 1..4096."
  }
}

variable "log_pages" {
  description = "Trigger log pages a fire second has (XJOB_LOG_PAGES), a multiple of shards when shards divides 16. 16 suits dense loads (a page write costs the whole page, so small pages keep each result's write small); 1 suits a sparse deployment of a few hundred jobs firing seconds apart (their fires of a second share one page, one write each for claims, replies and results instead of one per job), with shards = 1 (docs/aws.md#sparse-deployments). Never change it after the first job exists."
  type        = number
  default     = 16
  validation {
    condition     = contains([1, 2, 4, 8, 16], var.log_pages)
    error_message = "log_pages must be 1, 2, 4, 8 or 16."
  }
}

# The tokens are SSM Parameter Store SecureString parameters you create before applying
# (aws ssm put-parameter --type SecureString; docs/aws.md). The module gets their names only, so no
# token is in its variables, the functions' environment, the outputs or the Terraform state.

variable "access_token_parameter" {
  description = "SSM SecureString parameter holding the xxl-job access token shared with executors (one per line during a rotation, the first one sent). XJOB_ACCESS_TOKEN_PARAM."
  type        = string
  default     = "/xjob/access-token"
  validation {
    condition     = can(regex("^/[A-Za-z0-9_.\\-/]+$", var.access_token_parameter))
    error_message = "access_token_parameter must be an SSM parameter name starting with /."
  }
}

variable "admin_token_parameter" {
  description = "SSM SecureString parameter holding the bearer token of the /v1 admin API (one per line during a rotation). XJOB_ADMIN_TOKEN_PARAM."
  type        = string
  default     = "/xjob/admin-token"
  validation {
    condition     = can(regex("^/[A-Za-z0-9_.\\-/]+$", var.admin_token_parameter))
    error_message = "admin_token_parameter must be an SSM parameter name starting with /."
  }
}

variable "session_key_parameter" {
  description = "SSM SecureString parameter holding the secret console sessions are signed with. XJOB_SESSION_KEY_PARAM."
  type        = string
  default     = "/xjob/session-key"
  validation {
    condition     = can(regex("^/[A-Za-z0-9_.\\-/]+$", var.session_key_parameter))
    error_message = "session_key_parameter must be an SSM parameter name starting with /."
  }
}

variable "secrets_refresh" {
  description = "How often a warm function reads its secrets again, so a rotated token is in use within it (XJOB_SECRETS_REFRESH, 1s-1h)."
  type        = string
  default     = "5m"
  validation {
    condition     = can(regex("^(([1-9][0-9]{0,2}|[1-2][0-9]{3}|3[0-5][0-9]{2}|3600)s|([1-9]|[1-5][0-9]|60)m|1h)$", var.secrets_refresh))
    error_message = "secrets_refresh must be a whole number of s, m or h, from 1s to 1h."
  }
}

variable "log_level" {
  description = "Log level of every function (XJOB_LOG_LEVEL)."
  type        = string
  default     = "info"
  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "lambda_system_log_level" {
  description = "Level of Lambda's own log lines (JSON log format). WARN drops the START, END and REPORT lines of every invocation, which cost more log ingestion than the functions' own output; INFO brings them back."
  type        = string
  default     = "WARN"
  validation {
    condition     = contains(["DEBUG", "INFO", "WARN"], var.lambda_system_log_level)
    error_message = "lambda_system_log_level must be DEBUG, INFO or WARN."
  }
}

variable "scan_advance" {
  description = "How far ahead the scan plans a due job's fires (XJOB_SCAN_ADVANCE, a Go duration, 150s-14m). Longer means fewer job advances (write units) for frequent jobs."
  type        = string
  default     = "14m"
  validation {
    condition     = can(regex("^((1[5-9][0-9]|[2-7][0-9]{2}|8[0-3][0-9]|840)s|([3-9]|1[0-4])m)$", var.scan_advance))
    error_message = "scan_advance must be a whole number of s or m, e.g. 14m."
  }
}

variable "retry_delay" {
  description = "Wait before a failed trigger's retry, and before re-sending a retry the executor refused as busy (XJOB_RETRY_DELAY, a Go duration, 100ms-15m)."
  type        = string
  default     = "5s"
  validation {
    condition     = can(regex("^(([1-9][0-9]{2,4}|[1-8][0-9]{5}|900000)ms|([1-9][0-9]?|[1-8][0-9]{2}|900)s|([1-9]|1[0-5])m)$", var.retry_delay))
    error_message = "retry_delay must be a whole number of ms, s or m, e.g. 5s."
  }
}

variable "retry_backoff" {
  description = "Multiplier of the retry delay per retry already made; 1 keeps it constant (XJOB_RETRY_BACKOFF, 1-10)."
  type        = number
  default     = 1
  validation {
    condition     = var.retry_backoff >= 1 && var.retry_backoff <= 10
    error_message = "retry_backoff must be between 1 and 10."
  }
}

variable "allow_any_trigger_address" {
  description = "Let a manual trigger's address override name any http(s) address, not only the group's registered or manual ones (XJOB_ALLOW_ANY_TRIGGER_ADDRESS). Off by default; on, anyone holding the admin token can make the dispatch function POST the executor access token to any host it can reach."
  type        = bool
  default     = false
}

variable "executor_allow_cidrs" {
  description = "Executor address ranges allowed even where refused by default (loopback, link-local), comma-separated CIDRs or addresses without spaces (XJOB_ALLOW_CIDRS). Checked at registration and on every connection; private ranges are allowed already."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])([.](25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}(/(3[0-2]|[12]?[0-9]))?|(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:(:[0-9a-fA-F]{1,4}){1,6}|:((:[0-9a-fA-F]{1,4}){1,7}|:))(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?)(,((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])([.](25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}(/(3[0-2]|[12]?[0-9]))?|(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:(:[0-9a-fA-F]{1,4}){1,6}|:((:[0-9a-fA-F]{1,4}){1,7}|:))(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?))*)?$", var.executor_allow_cidrs))
    error_message = "executor_allow_cidrs must be IP addresses or CIDR ranges separated by commas, without spaces."
  }
}

variable "executor_deny_cidrs" {
  description = "Executor address ranges refused, comma-separated CIDRs or addresses without spaces (XJOB_DENY_CIDRS); they win over executor_allow_cidrs."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])([.](25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}(/(3[0-2]|[12]?[0-9]))?|(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:(:[0-9a-fA-F]{1,4}){1,6}|:((:[0-9a-fA-F]{1,4}){1,7}|:))(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?)(,((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])([.](25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}(/(3[0-2]|[12]?[0-9]))?|(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:(:[0-9a-fA-F]{1,4}){1,6}|:((:[0-9a-fA-F]{1,4}){1,7}|:))(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?))*)?$", var.executor_deny_cidrs))
    error_message = "executor_deny_cidrs must be IP addresses or CIDR ranges separated by commas, without spaces."
  }
}

variable "aws_target_arns" {
  description = "ARNs AWS jobs may call - Lambda functions, SQS queues, SNS topics, EventBridge buses, Step Functions state machines - comma-separated without spaces and without wildcards (XJOB_AWS_TARGET_ARNS). The ring, dispatch and web functions are granted lambda:InvokeFunction, sqs:SendMessage (and sqs:GetQueueUrl), sns:Publish, events:PutEvents and states:StartExecution on exactly these; empty = no AWS jobs (a job naming an ARN not listed is refused at save)."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^(arn:aws(-[a-z]+)*:(lambda:[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:function:[A-Za-z0-9_-]+(:[A-Za-z0-9_$-]+)?|(sqs|sns):[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:[A-Za-z0-9_-]+([.]fifo)?|events:[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:event-bus/[A-Za-z0-9_./-]+|states:[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:stateMachine:[A-Za-z0-9_-]+)(,arn:aws(-[a-z]+)*:(lambda:[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:function:[A-Za-z0-9_-]+(:[A-Za-z0-9_$-]+)?|(sqs|sns):[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:[A-Za-z0-9_-]+([.]fifo)?|events:[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:event-bus/[A-Za-z0-9_./-]+|states:[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:stateMachine:[A-Za-z0-9_-]+))*)?$", var.aws_target_arns))
    error_message = "aws_target_arns must be ARNs of Lambda functions, SQS queues, SNS topics, EventBridge buses or Step Functions state machines separated by commas, without spaces or wildcards."
  }
}

variable "trigger_log_retention_days" {
  description = "Days trigger logs are kept from their trigger time, a whole number from 7 (xxl-job's minimum) to 3650 (XJOB_LOG_RETENTION_DAYS); DynamoDB's TTL deletes them after. Not the functions' CloudWatch Logs (log_retention_days)."
  type        = string
  default     = "30"
  validation {
    condition     = can(regex("^([7-9]|[1-9][0-9]{1,2}|[12][0-9]{3}|3[0-5][0-9]{2}|36[0-4][0-9]|3650)$", var.trigger_log_retention_days))
    error_message = "trigger_log_retention_days must be a whole number of days from 7 to 3650."
  }
}

variable "metrics_per_job" {
  description = "Per-job result metrics (JobResults, JobResultFailures by JobId) for this many jobs of the deployment, the first to report results, the others as JobId other; 0 for none (XJOB_METRICS_PER_JOB). Each is a custom metric at $0.30 a month, per function that records results - up to $1.80 a month a job."
  type        = number
  default     = 0
  validation {
    condition     = var.metrics_per_job >= 0 && var.metrics_per_job <= 25 && floor(var.metrics_per_job) == var.metrics_per_job
    error_message = "metrics_per_job must be a whole number from 0 to 25."
  }
}

variable "ring_lead" {
  description = "How long before its second a ring bucket is visible at the latest, 50ms-1000ms in whole milliseconds (XJOB_RING_LEAD, read by the scan and web functions). The ring function waits that long for the instant, billed; a shorter lead costs less and leaves less margin for SQS's delay and the queue mapping's delivery, which make every fire of a bucket that arrives after its second late by as much."
  type        = string
  default     = "100ms"
  validation {
    condition     = can(regex("^([5-9][0-9]|[1-9][0-9]{2}|1000)ms$", var.ring_lead))
    error_message = "ring_lead must be whole milliseconds from 50ms to 1000ms."
  }
}

variable "custom_metrics" {
  description = "Write the pipeline's counters (Triggers, Results, the scan's Fires and ScanJobs, the ring's LatenessMaxMs, ...) as CloudWatch custom metrics in namespace xjob (XJOB_CUSTOM_METRICS), about 8 metrics at $0.30 a month each while jobs run. Off by default - the same records are plain JSON lines in the functions' logs (CloudWatch Logs Insights sums them) and no alarm of this stack reads them. metrics_per_job is its own opt-in."
  type        = bool
  default     = false
}

variable "glue_policy" {
  description = "Who creates and edits GLUE jobs, whose source code executors run (XJOB_GLUE_POLICY): admins, everyone (xxl-job's behaviour; an installation imported from xxl-job that relies on it) or off."
  type        = string
  default     = "admins"
  validation {
    condition     = contains(["admins", "everyone", "off"], var.glue_policy)
    error_message = "glue_policy must be admins, everyone or off."
  }
}

variable "vpc_subnet_ids" {
  description = "Private subnets for the functions that call executors (ring, dispatch, web) when the executors are in a VPC; empty = no VPC. Give vpc_security_group_ids too, and a route to DynamoDB, SQS, SNS and SSM (VPC endpoints or a NAT gateway; docs/aws.md)."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for s in var.vpc_subnet_ids : can(regex("^subnet-([0-9a-f]{8}|[0-9a-f]{17})$", s))])
    error_message = "vpc_subnet_ids must be subnet ids (subnet-...)."
  }
}

variable "vpc_security_group_ids" {
  description = "Security groups of those functions' network interfaces (outbound to the executors and the AWS endpoints); empty = no VPC."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for s in var.vpc_security_group_ids : can(regex("^sg-([0-9a-f]{8}|[0-9a-f]{17})$", s))])
    error_message = "vpc_security_group_ids must be security group ids (sg-...)."
  }
}

variable "start_declared_jobs" {
  description = "Create the jobs executors declare in code started rather than stopped (XJOB_START_DECLARED_JOBS, read by the registry function). Off by default."
  type        = bool
  default     = false
}

variable "ring_concurrency" {
  description = "Maximum concurrent ring invocations (SQS event source scaling_config, >= 2); the ring dispatches the fast lane itself, so this bounds it too."
  type        = number
  default     = 10
}

variable "ring_memory_size" {
  description = "Memory of the ring function only, a whole number of MB from 128 to 3008 (the others keep 256). Lambda gives CPU in proportion to memory (1,769 MB is one vCPU), so a ring bucket carrying hundreds of fires a second (1,000+ every-second jobs over few shards) starts its last calls past the default ring_lead (100 ms) at 256 and inside it at 1024; a sparse load costs least at 128 (docs/aws.md)."
  type        = number
  default     = 256
  validation {
    condition     = var.ring_memory_size >= 128 && var.ring_memory_size <= 3008 && floor(var.ring_memory_size) == var.ring_memory_size
    error_message = "ring_memory_size must be a whole number of MB from 128 to 3008."
  }
}

variable "log_retention_days" {
  description = "CloudWatch Logs retention of every function's log group."
  type        = number
  default     = 30
}

variable "alarm_email" {
  description = "Optional e-mail address subscribed to the alarm topic (empty: none)."
  type        = string
  default     = ""
}

variable "scan_stalled_minutes" {
  description = "Minutes without a completed scan before the scan-stalled alarm fires (the scan runs every minute)."
  type        = number
  default     = 5
  validation {
    condition     = var.scan_stalled_minutes >= 2 && var.scan_stalled_minutes <= 60
    error_message = "scan_stalled_minutes must be from 2 to 60."
  }
}

variable "api_rate_limit" {
  description = "Requests per second (and burst) of the HTTP API's routes without a limit of their own (executors call the function URL, whose ceiling is the callback function's reserved concurrency)."
  type        = number
  default     = 500
}

variable "web_rate_limit" {
  description = "Requests per second (and burst) of the human-facing routes (console, /v1), refused with 429 above it."
  type        = number
  default     = 20
}

variable "reserved_concurrency" {
  description = "Reserve concurrency for scan (2), registry (2), callback (15, the executors' function URL) and web (5), 24 in all. Lambda refuses a reservation that leaves fewer than 100 of the account's concurrency unreserved, so true needs a quota of at least 124 (make deploy-tf checks it first); new accounts start lower. Off by default."
  type        = bool
  default     = false
}

variable "executor_request_alarm" {
  description = "Requests to the executors' function URL (callback invocations) in 5 minutes above which the executor-request alarm fires - a flood of requests at the public URL bills an invocation each (default 300000, 1,000 a second; set it a few times your fleet's beats and results)."
  type        = number
  default     = 300000
  validation {
    condition     = var.executor_request_alarm >= 1 && var.executor_request_alarm <= 1000000000
    error_message = "executor_request_alarm must be at least 1."
  }
}

variable "table_billing_mode" {
  description = "Billing of the steady tables (jobs, logpages) and their indexes - PAY_PER_REQUEST (on demand) or PROVISIONED (capacity under auto scaling, table_capacity_min..table_capacity_max units each of read and write, tracking table_target_utilization), which the scan function switches to on demand table by table after an hour too quiet to pay for it and back when steady load returns. The other tables stay on demand. Set when the table is created: later, Terraform leaves the table's billing mode to the keeper (see docs/aws.md)."
  type        = string
  default     = "PAY_PER_REQUEST"
  validation {
    condition     = contains(["PAY_PER_REQUEST", "PROVISIONED"], var.table_billing_mode)
    error_message = "table_billing_mode must be PAY_PER_REQUEST or PROVISIONED."
  }
}

variable "table_capacity_min" {
  description = "With table_billing_mode PROVISIONED, the least read and write units of each steady table and index (each costs at least this much an hour while provisioned, loaded or not)."
  type        = number
  default     = 1
  validation {
    condition     = var.table_capacity_min >= 1 && var.table_capacity_min <= 40000
    error_message = "table_capacity_min must be from 1 to 40000."
  }
}

variable "table_capacity_max" {
  description = "With table_billing_mode PROVISIONED, the most read and write units auto scaling gives each steady table and index (past it and the burst credit, requests are throttled)."
  type        = number
  default     = 4000
  validation {
    condition     = var.table_capacity_max >= 1 && var.table_capacity_max <= 40000
    error_message = "table_capacity_max must be from 1 to 40000."
  }
}

variable "table_target_utilization" {
  description = "With table_billing_mode PROVISIONED, the consumed share of capacity auto scaling keeps, in percent."
  type        = number
  default     = 70
  validation {
    condition     = var.table_target_utilization >= 20 && var.table_target_utilization <= 90
    error_message = "table_target_utilization must be from 20 to 90."
  }
}
