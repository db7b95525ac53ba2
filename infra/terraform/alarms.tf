# Operational alarms, all on the alarm topic: every function's errors and throttles, the queues'
# oldest message, DynamoDB throttling per table, the executor URL's invocations, the HTTP API's
# 5xx, and a scan that stopped completing (AWS/Lambda's invocations without an error).

# Every function's errors and throttles (local.functions, functions.tf).
resource "aws_cloudwatch_metric_alarm" "function_errors" {
  for_each            = local.functions
  alarm_name          = "${var.name}-${each.key}-errors"
  alarm_description   = "xjob ${var.name}-${each.key}: invocations failed"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = "${var.name}-${each.key}" }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "function_throttles" {
  for_each            = local.functions
  alarm_name          = "${var.name}-${each.key}-throttles"
  alarm_description   = "xjob ${var.name}-${each.key}: invocations throttled (reserved or account concurrency exhausted)"
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = "${var.name}-${each.key}" }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

# The oldest message of the ring and lane queues (local.queue_age_alarms).
resource "aws_cloudwatch_metric_alarm" "queue_age" {
  for_each            = local.queue_age_alarms
  alarm_name          = "${var.name}-${each.key}-age"
  alarm_description   = "xjob ${each.key} queue: ${each.value.description}"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = aws_sqs_queue.queue[each.key].name }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 3
  threshold           = each.value.seconds
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

# Every table's read and write throttling (local.tables).
resource "aws_cloudwatch_metric_alarm" "table_throttles" {
  for_each            = local.tables
  alarm_name          = "${var.name}-${each.key}-table-throttles"
  alarm_description   = "xjob ${each.key} table: requests throttled (read or write)"
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
      dimensions  = { TableName = each.value }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "writes"
    metric {
      namespace   = "AWS/DynamoDB"
      metric_name = "WriteThrottleEvents"
      dimensions  = { TableName = each.value }
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

# The lanes (asynchronous invocations of the dispatch function): their backlog (the lane queues'
# oldest message before; AsyncEventAge is in milliseconds, retries' waits included), events
# dropped, and events in the dead-letter queue.
resource "aws_cloudwatch_metric_alarm" "dispatch_event_age" {
  alarm_name          = "${var.name}-dispatch-event-age"
  alarm_description   = "xjob dispatch lanes: tasks wait longer than 5 minutes for the dispatch function (throttled, or failing and retried)"
  namespace           = "AWS/Lambda"
  metric_name         = "AsyncEventAge"
  dimensions          = { FunctionName = aws_lambda_function.dispatch.function_name }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 3
  threshold           = 300000
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "dispatch_events_dropped" {
  alarm_name          = "${var.name}-dispatch-events-dropped"
  alarm_description   = "xjob dispatch lanes: events dropped (past their maximum age, or failed every attempt); an event with a destination is in the dispatch dead-letter queue"
  namespace           = "AWS/Lambda"
  metric_name         = "AsyncEventsDropped"
  dimensions          = { FunctionName = aws_lambda_function.dispatch.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}

resource "aws_cloudwatch_metric_alarm" "dispatch_dlq" {
  alarm_name          = "${var.name}-dispatch-dlq"
  alarm_description   = "xjob dispatch lane events failed every attempt or expired (their tasks are in the dispatch dead-letter queue)"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = aws_sqs_queue.dispatch_dlq.name }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarm.arn]
}
