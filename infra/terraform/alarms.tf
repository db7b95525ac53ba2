# Operational alarms, all on the alarm topic: every function's errors and throttles, the queues'
# oldest message, DynamoDB throttling per table, the HTTP API's 5xx, and a scan that stopped
# completing (the scan writes ScanCompleted through the embedded metric format in its log).

resource "aws_cloudwatch_metric_alarm" "scan_errors" {
  alarm_name          = "${var.name}-scan-errors"
  alarm_description   = "xjob ${var.name}-scan: invocations failed"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.scan.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "scan_throttles" {
  alarm_name          = "${var.name}-scan-throttles"
  alarm_description   = "xjob ${var.name}-scan: invocations throttled (reserved or account concurrency exhausted)"
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = aws_lambda_function.scan.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "ring_errors" {
  alarm_name          = "${var.name}-ring-errors"
  alarm_description   = "xjob ${var.name}-ring: invocations failed"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.ring.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "ring_throttles" {
  alarm_name          = "${var.name}-ring-throttles"
  alarm_description   = "xjob ${var.name}-ring: invocations throttled (reserved or account concurrency exhausted)"
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = aws_lambda_function.ring.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "dispatch_errors" {
  alarm_name          = "${var.name}-dispatch-errors"
  alarm_description   = "xjob ${var.name}-dispatch: invocations failed"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.dispatch.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "dispatch_throttles" {
  alarm_name          = "${var.name}-dispatch-throttles"
  alarm_description   = "xjob ${var.name}-dispatch: invocations throttled (reserved or account concurrency exhausted)"
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = aws_lambda_function.dispatch.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "callback_errors" {
  alarm_name          = "${var.name}-callback-errors"
  alarm_description   = "xjob ${var.name}-callback: invocations failed"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.callback.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "callback_throttles" {
  alarm_name          = "${var.name}-callback-throttles"
  alarm_description   = "xjob ${var.name}-callback: invocations throttled (reserved or account concurrency exhausted)"
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = aws_lambda_function.callback.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

# The executors' function URL is public (AuthType NONE, as executors need): every request,
# refused or not, is a billed invocation. This alarm says when they run far above the fleet's
# own rate; reserved_concurrency caps them as well.
resource "aws_cloudwatch_metric_alarm" "callback_invocations" {
  alarm_name          = "${var.name}-callback-invocations"
  alarm_description   = "xjob ${var.name}-callback: executor API requests above executor_request_alarm in 5 minutes (a flood at the public function URL?)"
  namespace           = "AWS/Lambda"
  metric_name         = "Invocations"
  dimensions          = { FunctionName = aws_lambda_function.callback.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = var.executor_request_alarm
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "registry_errors" {
  alarm_name          = "${var.name}-registry-errors"
  alarm_description   = "xjob ${var.name}-registry: invocations failed"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.registry.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "registry_throttles" {
  alarm_name          = "${var.name}-registry-throttles"
  alarm_description   = "xjob ${var.name}-registry: invocations throttled (reserved or account concurrency exhausted)"
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = aws_lambda_function.registry.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "web_errors" {
  alarm_name          = "${var.name}-web-errors"
  alarm_description   = "xjob ${var.name}-web: invocations failed"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.web.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "web_throttles" {
  alarm_name          = "${var.name}-web-throttles"
  alarm_description   = "xjob ${var.name}-web: invocations throttled (reserved or account concurrency exhausted)"
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = aws_lambda_function.web.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "ring_age" {
  alarm_name          = "${var.name}-ring-age"
  alarm_description   = "xjob ring queue: ring buckets are sent up to 14 minutes ahead (the scan advance); older than that plus two minutes, the ring is not consuming"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = aws_sqs_queue.ring.name }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 3
  threshold           = 1020
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "dispatch_fast_age" {
  alarm_name          = "${var.name}-dispatch-fast-age"
  alarm_description   = "xjob dispatch-fast queue: tasks wait longer than 5 minutes for the dispatch function"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = aws_sqs_queue.dispatch_fast.name }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 3
  threshold           = 300
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "dispatch_slow_age" {
  alarm_name          = "${var.name}-dispatch-slow-age"
  alarm_description   = "xjob dispatch-slow queue: slow-lane tasks wait longer than 10 minutes"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = aws_sqs_queue.dispatch_slow.name }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 3
  threshold           = 600
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "jobs_table_throttles" {
  alarm_name          = "${var.name}-jobs-table-throttles"
  alarm_description   = "xjob jobs table: requests throttled (read or write)"
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "reads"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "ReadThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.jobs.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.jobs.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "throttled"
    expression  = "reads + writes"
    return_data = true
  }
}

resource "aws_cloudwatch_metric_alarm" "groups_table_throttles" {
  alarm_name          = "${var.name}-groups-table-throttles"
  alarm_description   = "xjob groups table: requests throttled (read or write)"
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "reads"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "ReadThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.groups.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.groups.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "throttled"
    expression  = "reads + writes"
    return_data = true
  }
}

resource "aws_cloudwatch_metric_alarm" "log_pages_table_throttles" {
  alarm_name          = "${var.name}-logpages-table-throttles"
  alarm_description   = "xjob logpages table: requests throttled (read or write)"
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "reads"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "ReadThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.log_pages.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.log_pages.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "throttled"
    expression  = "reads + writes"
    return_data = true
  }
}

resource "aws_cloudwatch_metric_alarm" "registry_table_throttles" {
  alarm_name          = "${var.name}-registry-table-throttles"
  alarm_description   = "xjob registry table: requests throttled (read or write)"
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "reads"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "ReadThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.registry.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.registry.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "throttled"
    expression  = "reads + writes"
    return_data = true
  }
}

resource "aws_cloudwatch_metric_alarm" "leases_table_throttles" {
  alarm_name          = "${var.name}-leases-table-throttles"
  alarm_description   = "xjob leases table: requests throttled (read or write)"
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "reads"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "ReadThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.leases.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.leases.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "throttled"
    expression  = "reads + writes"
    return_data = true
  }
}

resource "aws_cloudwatch_metric_alarm" "reports_table_throttles" {
  alarm_name          = "${var.name}-reports-table-throttles"
  alarm_description   = "xjob reports table: requests throttled (read or write)"
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "reads"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "ReadThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.reports.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.reports.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "throttled"
    expression  = "reads + writes"
    return_data = true
  }
}

resource "aws_cloudwatch_metric_alarm" "counters_table_throttles" {
  alarm_name          = "${var.name}-counters-table-throttles"
  alarm_description   = "xjob counters table: requests throttled (read or write)"
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "reads"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "ReadThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.counters.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.counters.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "throttled"
    expression  = "reads + writes"
    return_data = true
  }
}

resource "aws_cloudwatch_metric_alarm" "console_table_throttles" {
  alarm_name          = "${var.name}-console-table-throttles"
  alarm_description   = "xjob console table: requests throttled (read or write)"
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "reads"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "ReadThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.console.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = aws_dynamodb_table.console.name }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "throttled"
    expression  = "reads + writes"
    return_data = true
  }
}

resource "aws_cloudwatch_metric_alarm" "api_5xx" {
  alarm_name          = "${var.name}-api-5xx"
  alarm_description   = "xjob HTTP API answered 5xx (a function failed or timed out)"
  namespace           = "AWS/ApiGateway"
  metric_name         = "5xx"
  dimensions          = { ApiId = aws_apigatewayv2_api.http.id, Stage = "$default" }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

# A completed tick is a scan invocation without an error (a failed tick returns one; a timeout
# counts as one): AWS/Lambda's own metrics say it, with no custom metric to pay for.
resource "aws_cloudwatch_metric_alarm" "scan_stalled" {
  alarm_name          = "${var.name}-scan-stalled"
  alarm_description   = "xjob scan has not completed for ${var.scan_stalled_minutes} minutes: no fires are being planned"
  evaluation_periods  = var.scan_stalled_minutes
  threshold           = 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching" # no invocation at all is the failure this alarm is for
  alarm_actions       = [aws_sns_topic.alarm.arn]
  metric_query {
    id = "invocations"
    metric {
      namespace   = "AWS/Lambda"
      metric_name = "Invocations"
      dimensions  = { FunctionName = aws_lambda_function.scan.function_name }
      period      = 60
      stat        = "Sum"
    }
  }
  metric_query {
    id = "errors"
    metric {
      namespace   = "AWS/Lambda"
      metric_name = "Errors"
      dimensions  = { FunctionName = aws_lambda_function.scan.function_name }
      period      = 60
      stat        = "Sum"
    }
  }
  metric_query {
    id          = "completed"
    expression  = "invocations - FILL(errors, 0)"
    return_data = true
  }
}
