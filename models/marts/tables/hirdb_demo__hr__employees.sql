{{ config(materialized='view') }}
{{ cdc_typed_current_state("hirdb_demo", "HR", "EMPLOYEES") }}
