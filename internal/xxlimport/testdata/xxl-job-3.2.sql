-- Written for xjob's tests (Apache-2.0), not copied from xxl-job: the tables
-- of xxl-job-2.4.sql as releases 3.2.x and 3.3.x have them: passwords are
-- SHA-256 digests (64 hex characters) and each user has a sign-in token.

create table xxl_job_group (
  id           int not null auto_increment primary key,
  app_name     varchar(64) not null,
  title        varchar(12) not null,
  address_type tinyint not null default 0,
  address_list text,
  update_time  datetime
) default charset = utf8mb4;

create table xxl_job_info (
  id                        int not null auto_increment primary key,
  job_group                 int not null,
  job_desc                  varchar(255) not null,
  author                    varchar(64),
  alarm_email               varchar(255),
  schedule_type             varchar(50) not null default 'NONE',
  schedule_conf             varchar(128),
  misfire_strategy          varchar(50) not null default 'DO_NOTHING',
  executor_route_strategy   varchar(50),
  executor_handler          varchar(255),
  executor_param            varchar(512),
  executor_block_strategy   varchar(50),
  executor_timeout          int not null default 0,
  executor_fail_retry_count int not null default 0,
  glue_type                 varchar(50) not null,
  glue_source               mediumtext,
  glue_remark               varchar(128),
  glue_updatetime           datetime,
  child_jobid               varchar(255),
  trigger_status            tinyint not null default 0,
  trigger_last_time         bigint not null default 0,
  trigger_next_time         bigint not null default 0,
  add_time                  datetime,
  update_time               datetime
) default charset = utf8mb4;

create table xxl_job_logglue (
  id          int not null auto_increment primary key,
  job_id      int not null,
  glue_type   varchar(50),
  glue_source mediumtext,
  glue_remark varchar(128) not null,
  add_time    datetime,
  update_time datetime
) default charset = utf8mb4;

create table xxl_job_user (
  id         int not null auto_increment primary key,
  username   varchar(50) not null unique,
  password   varchar(100) not null,
  token      varchar(100),
  role       tinyint not null,
  permission varchar(255)
) default charset = utf8mb4;

create table xxl_job_log (
  id                        bigint not null auto_increment primary key,
  job_group                 int not null,
  job_id                    int not null,
  executor_address          varchar(255),
  executor_handler          varchar(255),
  executor_param            varchar(512),
  executor_sharding_param   varchar(20),
  executor_fail_retry_count int not null default 0,
  trigger_time              datetime,
  trigger_code              int not null,
  trigger_msg               text,
  handle_time               datetime,
  handle_code               int not null,
  handle_msg                text,
  alarm_status              tinyint not null default 0,
  key (trigger_time)
) default charset = utf8mb4;

create table xxl_job_log_report (
  id            int not null auto_increment primary key,
  trigger_day   datetime unique,
  running_count int not null default 0,
  suc_count     int not null default 0,
  fail_count    int not null default 0,
  update_time   datetime
) default charset = utf8mb4;
